package actors

import (
	"testing"
	"time"
)

// TestBurstOver checks when the passivation sweep gives a burst's memory back: after
// releaseAfter stopped actors once most are gone, and after releaseIdleAfter once
// nothing is live, but not for a handful, nor while what stopped is outnumbered by
// what still runs. Actors stopped at their intent's end count only once nothing is live.
func TestBurstOver(t *testing.T) {
	idle := newHarness(t, func(c *Config) { c.PassivateAfter = time.Hour })
	busy, _, _ := acquiredIntent(t) // one actor live, a call in flight
	cases := []struct {
		name    string
		h       *harness
		stopped int
		ended   int
		want    bool
	}{
		{"nothing stopped", idle, 0, 0, false},
		{"a handful stopped, nothing live", idle, releaseIdleAfter - 1, 0, false},
		{"enough stopped, nothing live", idle, releaseIdleAfter, 0, true},
		{"enough for idle, one still live", busy, releaseIdleAfter, 0, false},
		{"a burst stopped, one still live", busy, releaseAfter, 0, true},
		{"a quarter still live", busy, 4, 0, false},
		{"enough ended, nothing live", idle, 0, releaseIdleAfter, true},
		{"passivated and ended together, nothing live", idle, releaseIdleAfter / 2, releaseIdleAfter / 2, true},
		{"a burst ended, one still live", busy, 0, releaseAfter, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.h.e.burstOver(c.stopped, c.ended); got != c.want {
				t.Errorf("burstOver(%d, %d) with %d actors live = %v, want %v", c.stopped, c.ended, c.h.e.registry.live(), got, c.want)
			}
		})
	}
}
