// Package clusterpb holds the protobuf messages between intentd nodes in cluster mode:
// the commands a node sends to an intent's grain, wherever the cluster placed it, and
// the grain's replies. protoactor-go's remoting carries only protobuf messages, so the
// domain types of package intentd cross a node in these forms, and the conversions here
// are the one place that maps between the two.
//
// intent.pb.go is generated from intent.proto by `make proto` and committed, so that a
// build needs no protoc; TestGeneratedCodeIsCurrent fails when the two disagree.
package clusterpb
