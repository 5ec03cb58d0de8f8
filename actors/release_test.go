package actors

import (
	"testing"
	"time"
)

// TestBurstOver checks when the passivation sweep gives a burst's memory back: after
// releaseAfter stopped actors once most are gone, and after releaseIdleAfter once
// nothing is live, but not for a handful, nor while what stopped is outnumbered by
// what still runs.
func TestBurstOver(t *testing.T) {
	idle := newHarness(t, func(c *Config) { c.PassivateAfter = time.Hour })
	busy, _, _ := acquiredIntent(t) // one actor live, a call in flight
	cases := []struct {
		name    string
		h       *harness
		stopped int
		want    bool
	}{
		{"nothing stopped", idle, 0, false},
		{"a handful stopped, nothing live", idle, releaseIdleAfter - 1, false},
		{"enough stopped, nothing live", idle, releaseIdleAfter, true},
		{"enough for idle, one still live", busy, releaseIdleAfter, false},
		{"a burst stopped, one still live", busy, releaseAfter, true},
		{"a quarter still live", busy, 4, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.h.e.burstOver(c.stopped); got != c.want {
				t.Errorf("burstOver(%d) with %d actors live = %v, want %v", c.stopped, c.h.e.registry.live(), got, c.want)
			}
		})
	}
}
