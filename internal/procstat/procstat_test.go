package procstat

import (
	"testing"
	"time"
)

// TestParse reads the lines of /proc/<pid>/stat, a command name with spaces and
// parentheses among them, and refuses what is cut short or not a count.
func TestParse(t *testing.T) {
	tests := []struct {
		name, text string
		want       Stat
		wantErr    bool
	}{
		{"plain", "4242 (intentd) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 9 0", Stat{CPU: 3 * time.Second, MinorFaults: 1000}, false},
		{"a name with spaces and parentheses", "7 (a b) c) R 1 7 7 0 -1 0 12 0 0 0 100 0 0 0 20 0 1 0", Stat{CPU: time.Second, MinorFaults: 12}, false},
		{"short", "7 (x) R 1 2", Stat{}, true},
		{"no name", "7 x R", Stat{}, true},
		{"not a number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 u 0 0 0", Stat{}, true},
		{"faults not a number", "7 (x) R 1 7 7 0 -1 0 x 0 0 0 1 0 0 0", Stat{}, true},
		{"negative", "7 (x) R 1 7 7 0 -1 0 -4 0 0 0 1 0 0 0", Stat{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.text)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
