package actors

import "testing"

// TestDecidedWhereTaken checks which of an intent's messages a cluster member decides
// itself, whoever owns the intent: a plain proposal; not a purchase's, which its
// mandate counts and a resume by the owner would decide again, nor the commands the
// owner serves.
func TestDecidedWhereTaken(t *testing.T) {
	tests := []struct {
		name         string
		msg          any
		ownerDecides bool
		want         bool
	}{
		{"a proposal", propose{}, false, true},
		{"a purchase's proposal", propose{purchase: true}, false, false},
		{"an expiry", expire{}, false, false},
		{"a resume", resume{}, false, false},
		{"a create", create{}, false, false},
		{"a proposal, sent to owners as the release before did", propose{}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &registry{e: &Engine{cfg: Config{Cluster: &ClusterConfig{ownerDecides: tt.ownerDecides}}}}
			if got := r.decidedWhereTaken(tt.msg); got != tt.want {
				t.Errorf("decidedWhereTaken(%T) = %v, want %v", tt.msg, got, tt.want)
			}
		})
	}
}
