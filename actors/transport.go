package actors

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// streamWindow is the flow-control window of the gRPC connections between members, per
// stream and per connection. A window set (of 64 KiB or more) turns off gRPC's
// estimate of the link's bandwidth-delay product, which otherwise sends a ping after
// the first data a connection reads since the last ping's answer: between members that
// exchange a command and its reply at a time, nearly a ping and its answer for every
// message, two more frames each written and read by both members. Commands and
// replies are a few hundred bytes; the window bounds what a peer may send before it is
// read, not what is allocated.
const streamWindow = 1 << 20

// dialOptions are how a member dials the others' cluster ports: with creds (mutual
// TLS) or in the clear when nil (loopback, or --cluster-insecure), and a set window.
func dialOptions(creds credentials.TransportCredentials) []grpc.DialOption {
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithInitialWindowSize(streamWindow), grpc.WithInitialConnWindowSize(streamWindow)}
}

// serverOptions are those of a member's cluster port, the peer of dialOptions.
func serverOptions(creds credentials.TransportCredentials) []grpc.ServerOption {
	opts := []grpc.ServerOption{grpc.InitialWindowSize(streamWindow), grpc.InitialConnWindowSize(streamWindow)}
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	return opts
}
