package webhook

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// DefaultSchedule is the delay before each attempt of an event, the first one
// immediate: the Standard Webhooks reference schedule, about 27.5 hours in all. An
// endpoint whose event fails its last attempt is disabled.
var DefaultSchedule = []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// ParseSchedule reads a schedule written as durations separated by commas, such as
// "0s,5s,5m,30m,2h,5h,10h,10h": at least one, none negative.
func ParseSchedule(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		d, err := time.ParseDuration(part)
		if err != nil {
			return nil, fmt.Errorf("retry schedule %q: %q is not a duration (such as 5s, 30m, 2h)", s, part)
		}
		if d < 0 {
			return nil, fmt.Errorf("retry schedule %q: %s is negative", s, part)
		}
		out = append(out, d)
	}
	return out, nil
}

// jitter spreads a delay by up to a tenth either way, so that endpoints failing
// together do not retry together.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	spread := int64(d) / 10
	return d + time.Duration(rand.Int64N(2*spread+1)-spread)
}
