package netguard

import (
	"net"
	"testing"
)

func TestPublicIP(t *testing.T) {
	tests := []struct {
		ip     string
		public bool
	}{
		{"93.184.216.34", true},
		{"2606:2800:220:1:248:1893:25c8:1946", true},
		{"127.0.0.1", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"100.128.0.1", true},
		{"0.0.0.0", false},
		{"::1", false},
		{"fe80::1", false},
		{"fd00::1", false},
		{"::ffff:127.0.0.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			if got := PublicIP(net.ParseIP(tt.ip)); got != tt.public {
				t.Errorf("PublicIP(%s) = %v, want %v", tt.ip, got, tt.public)
			}
		})
	}
}
