package main

import (
	"strings"
	"testing"
)

// TestClusterFlags checks the cluster's flags: a member beyond loopback speaks mutual
// TLS or says it means not to, and the TLS flags come together.
func TestClusterFlags(t *testing.T) {
	t.Parallel()
	nats := []string{"--store", "nats://a:4222"}
	tls := []string{"--cluster-tls-cert", "m.pem", "--cluster-tls-key", "m.key", "--cluster-tls-ca", "ca.pem"}
	args := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"loopback without TLS", args(nats, []string{"--cluster-bind", "127.0.0.1:7300"}), nil, ""},
		{"localhost without TLS", args(nats, []string{"--cluster-bind", "localhost:7300"}), nil, ""},
		{"IPv6 loopback without TLS", args(nats, []string{"--cluster-bind", "[::1]:7300"}), nil, ""},
		{"beyond loopback without TLS", args(nats, []string{"--cluster-bind", "10.0.0.1:7300"}), nil,
			"--cluster-bind 10.0.0.1:7300 is beyond loopback, where anyone who reaches the port would act as a member: give --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca"},
		{"a name beyond loopback without TLS", args(nats, []string{"--cluster-bind", "node1.internal:7300"}), nil, "--cluster-insecure"},
		{"beyond loopback with TLS", args(nats, []string{"--cluster-bind", "10.0.0.1:7300"}, tls), nil, ""},
		{"TLS from the environment", args(nats, []string{"--cluster-bind", "10.0.0.1:7300"}),
			map[string]string{"INTENTD_CLUSTER_TLS_CERT": "m.pem", "INTENTD_CLUSTER_TLS_KEY": "m.key", "INTENTD_CLUSTER_TLS_CA": "ca.pem"}, ""},
		{"beyond loopback, insecure on purpose", args(nats, []string{"--cluster-bind", "10.0.0.1:7300", "--cluster-insecure"}), nil, ""},
		{"insecure and TLS", args(nats, []string{"--cluster-bind", "10.0.0.1:7300", "--cluster-insecure"}, tls), nil, "give one of them"},
		{"TLS without its CA", args(nats, []string{"--cluster-bind", "10.0.0.1:7300", "--cluster-tls-cert", "m.pem", "--cluster-tls-key", "m.key"}), nil,
			"all three of --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca"},
		{"TLS without a cluster", args(nats, tls), nil, "give --cluster-bind too"},
		{"a negative bound of grains", args(nats, []string{"--cluster-bind", "127.0.0.1:7300", "--cluster-max-grains", "-1"}), nil, "--cluster-max-grains -1"},
		{"insecure without a cluster", args(nats, []string{"--cluster-insecure"}), nil, "give --cluster-bind too"},
		{"advertised name, bound address", args(nats, []string{"--cluster-bind", "10.0.0.1:7300", "--cluster-advertise", "intentd-0.intentd-members.ns.svc.cluster.local:7300"}, tls), nil, ""},
		{"advertised, every interface bound", args(nats, []string{"--cluster-bind", "0.0.0.0:7300", "--cluster-advertise", "node1.internal:7300"}, tls), nil, ""},
		{"every interface, not advertised", args(nats, []string{"--cluster-bind", "0.0.0.0:7300"}, tls), nil, "give --cluster-advertise"},
		{"IPv6 every interface, not advertised", args(nats, []string{"--cluster-bind", "[::]:7300"}, tls), nil, "give --cluster-advertise"},
		{"advertised every interface", args(nats, []string{"--cluster-bind", "10.0.0.1:7300", "--cluster-advertise", "0.0.0.0:7300"}, tls), nil, "not every interface"},
		{"advertised without a port", args(nats, []string{"--cluster-bind", "10.0.0.1:7300", "--cluster-advertise", "node1.internal"}, tls), nil, "--cluster-advertise"},
		{"advertised from the environment", args(nats, []string{"--cluster-bind", "10.0.0.1:7300"}, tls), map[string]string{"INTENTD_CLUSTER_ADVERTISE": "node1.internal"}, "--cluster-advertise"},
		{"advertised without a cluster", args(nats, []string{"--cluster-advertise", "node1.internal:7300"}), nil, "give --cluster-bind too"},
		{"loopback bound, advertised beyond it without TLS", args(nats, []string{"--cluster-bind", "127.0.0.1:7300", "--cluster-advertise", "node1.internal:7300"}), nil, "--cluster-advertise node1.internal:7300 is beyond loopback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args, tt.env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseFlags: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}
