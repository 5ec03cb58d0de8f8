package procstat

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Machine is the CPU time all the machine's cores have spent since boot, from the
// first line of /proc/stat. Two readings a moment apart say how many cores were busy
// in between, which the one-minute load average cannot: it still counts, for a minute
// after they ended, processes that no longer run (a run before this one).
// The times are in clock ticks (USER_HZ), summed over the cores, rather than Durations:
// a Duration holds 2^63 ns, which a machine of thousands of cores passes within weeks.
type Machine struct {
	// Busy is the time spent running anything: user, nice, system, interrupts and the
	// time a hypervisor took (steal).
	Busy int64
	// Idle is the time spent idle, or waiting on the disk with nothing to run.
	Idle int64
}

// ReadMachine reads /proc/stat.
func ReadMachine() (Machine, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Machine{}, err
	}
	return ParseMachine(string(b))
}

// ParseMachine reads the "cpu" line of /proc/stat: user, nice, system, idle, iowait,
// irq, softirq and steal, the first eight counts (in USER_HZ). The guest times after
// them are already counted in user and nice, and kernels before 2.6.33 write fewer
// than ten counts, so only the eight are read.
func ParseMachine(s string) (Machine, error) {
	line, _, _ := strings.Cut(s, "\n")
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != "cpu" {
		return Machine{}, errors.New("/proc/stat: the first line is not the cpu line")
	}
	if len(f) < 9 {
		return Machine{}, fmt.Errorf("/proc/stat: %d counts on the cpu line, want at least 8", len(f)-1)
	}
	var n [8]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || v < 0 || v > maxTicks {
			return Machine{}, fmt.Errorf("/proc/stat: %q is not a count", f[i+1])
		}
		n[i] = v
	}
	user, nice, system, idle, iowait, irq, softirq, steal := n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]
	return Machine{Busy: user + nice + system + irq + softirq + steal, Idle: idle + iowait}, nil
}

// maxTicks bounds each count, so that a sum of eight stays within an int64: 2^59 ticks
// is beyond any uptime (at 100 a second and 4,096 cores, 10^7 years), so a larger one
// is damage, not time.
const maxTicks = 1 << 59

// BusyCores is how many cores were busy, on average, between two readings: 0 for a
// machine that did nothing, the number of cores for one whose cores all ran throughout.
// It is 0 when the readings show no time passing.
func BusyCores(before, after Machine, cores int) float64 {
	busy := after.Busy - before.Busy
	total := busy + after.Idle - before.Idle
	if total <= 0 || busy < 0 {
		return 0
	}
	return float64(cores) * float64(busy) / float64(total)
}
