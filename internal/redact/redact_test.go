package redact

import "testing"

func TestURLs(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"pebble", "pebble"},
		{"nats://a:4222", "nats://a:4222"},
		{"nats://user:pass@a:4222", "nats://xxxxx@a:4222"},
		{"nats://s3cret@a:4222,nats://b:4222", "nats://xxxxx@a:4222,nats://b:4222"},
		{"nats://u:p@a:4222,tls://t@b:4222", "nats://xxxxx@a:4222,tls://xxxxx@b:4222"},
		{"nats://u:p,w/@x@a:4222", "nats://xxxxx@xxxxx@a:4222"}, // an @ of the password is masked on both sides
	} {
		if got := URLs(tt.in); got != tt.want {
			t.Errorf("URLs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
