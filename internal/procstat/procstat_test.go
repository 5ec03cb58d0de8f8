package procstat

import (
	"os"
	"strings"
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

// TestParseMachine reads the cpu line of /proc/stat, of kernels old and new, and
// refuses a first line that is not it, or counts cut short, negative or past any uptime.
func TestParseMachine(t *testing.T) {
	tests := []struct {
		name, text string
		want       Machine
		wantErr    bool
	}{
		{"ten counts", "cpu  583903 5641 197750 851389 18249 0 22950 1166 0 0\ncpu0 299715 2658 95197 431512 7966 0 7031 497 0 0\n",
			Machine{Busy: 583903 + 5641 + 197750 + 22950 + 1166, Idle: 851389 + 18249}, false},
		{"eight counts (kernels before 2.6.33)", "cpu 10 0 5 100 2 1 1 3", Machine{Busy: 20, Idle: 102}, false},
		{"no line break", "cpu 1 2 3 4 5 6 7 8 9 10", Machine{Busy: 1 + 2 + 3 + 6 + 7 + 8, Idle: 9}, false},
		{"a core's line first", "cpu0 1 2 3 4 5 6 7 8\ncpu 1 2 3 4 5 6 7 8", Machine{}, true},
		{"seven counts", "cpu 1 2 3 4 5 6 7", Machine{}, true},
		{"empty", "", Machine{}, true},
		{"not a count", "cpu 1 2 x 4 5 6 7 8", Machine{}, true},
		{"negative", "cpu 1 2 -3 4 5 6 7 8", Machine{}, true},
		{"past any uptime", "cpu 576460752303423489 0 0 0 0 0 0 0", Machine{}, true},
		{"the largest taken", "cpu 576460752303423488 576460752303423488 576460752303423488 0 0 576460752303423488 576460752303423488 576460752303423488",
			Machine{Busy: 6 << 59}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMachine(tt.text)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %+v, %v; want %+v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestBusyCores turns two readings into the cores busy between them.
func TestBusyCores(t *testing.T) {
	tests := []struct {
		name          string
		before, after Machine
		cores         int
		want          float64
	}{
		{"idle", Machine{Busy: 100, Idle: 100}, Machine{Busy: 100, Idle: 300}, 2, 0},
		{"one core of two", Machine{Busy: 100, Idle: 100}, Machine{Busy: 200, Idle: 200}, 2, 1},
		{"all cores", Machine{Busy: 100, Idle: 100}, Machine{Busy: 500, Idle: 100}, 4, 4},
		{"no time passed", Machine{Busy: 100, Idle: 100}, Machine{Busy: 100, Idle: 100}, 2, 0},
		{"readings in the wrong order", Machine{Busy: 200, Idle: 200}, Machine{Busy: 100, Idle: 100}, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BusyCores(tt.before, tt.after, tt.cores); got != tt.want {
				t.Errorf("BusyCores = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReadMachine reads this machine's /proc/stat, where there is one.
func TestReadMachine(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat here:", err)
	}
	m, err := ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	if m.Busy <= 0 || m.Idle <= 0 {
		t.Errorf("ReadMachine = %+v: a machine that has run has spent time both busy and idle", m)
	}
}

// FuzzParseMachine feeds ParseMachine what a damaged or foreign /proc/stat might hold:
// it never panics, and what it takes, it reads as the sums of the counts it found.
func FuzzParseMachine(f *testing.F) {
	f.Add("cpu  583903 5641 197750 851389 18249 0 22950 1166 0 0\ncpu0 1 2 3 4 5 6 7 8")
	f.Add("cpu 1 2 3 4 5 6 7")
	f.Add("cpu0 1 2 3 4 5 6 7 8")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMachine(s)
		if err != nil {
			return
		}
		if m.Busy < 0 || m.Idle < 0 {
			t.Errorf("ParseMachine(%q) = %+v: negative times", s, m)
		}
		if !strings.HasPrefix(strings.TrimLeft(s, " \t\v\f\r"), "cpu") {
			t.Errorf("ParseMachine(%q) took a first line that is not the cpu line", s)
		}
	})
}

// FuzzParse feeds Parse what a damaged /proc/<pid>/stat might hold: it never panics,
// and what it takes has no negative time or count.
func FuzzParse(f *testing.F) {
	f.Add("4242 (intentd) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 9 0")
	f.Add("7 (a b) c) R 1 7 7 0 -1 0 12 0 0 0 100 0 0 0 20 0 1 0")
	f.Add("7 (x) R 1 2")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := Parse(s)
		if err != nil {
			return
		}
		if st.MinorFaults < 0 || st.CPU < 0 {
			t.Errorf("Parse(%q) = %+v: negative", s, st)
		}
	})
}
