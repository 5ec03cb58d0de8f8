// Package procstat reads what Linux says of another process's CPU and page faults in
// /proc/<pid>/stat: the load tool's figures for the servers it measures, and the
// cluster-cost measurement's for members the load does not reach. It also reads the
// whole machine's CPU in /proc/stat, so that the load tool can say whether other work
// was using the cores when a run started.
package procstat

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Stat is what is read of a process's /proc/<pid>/stat.
type Stat struct {
	// CPU is the CPU time (user and system) the process has used so far: with the
	// tool's own, it says which side of a run the cores went to.
	CPU time.Duration
	// MinorFaults counts the pages the process touched for the first time (or got
	// back after the kernel took them). A server still growing its memory pays one
	// for every fresh page: on this kind of VM about 13 µs each, which is why a run
	// that says many of them measures a server not yet in its steady state.
	MinorFaults int64
}

// Read reads process pid's /proc/<pid>/stat.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	return Parse(string(b))
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// Parse reads minflt, utime and stime, the 10th, 14th and 15th fields. The command
// name, the second, is in parentheses and may hold spaces, so fields are counted after
// its ')'.
func Parse(s string) (Stat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, errors.New("/proc stat: no command name")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is the 3rd field (state): minflt is the 10th, so f[7]; utime f[11], stime f[12].
	if len(f) < 13 {
		return Stat{}, fmt.Errorf("/proc stat: %d fields after the name, want at least 13", len(f))
	}
	var n [3]int64
	for k, idx := range [3]int{7, 11, 12} {
		v, err := strconv.ParseInt(f[idx], 10, 64)
		if err != nil || v < 0 {
			return Stat{}, fmt.Errorf("/proc stat: %q is not a count", f[idx])
		}
		n[k] = v
	}
	return Stat{CPU: time.Duration(n[1]+n[2]) * time.Second / clockTicks, MinorFaults: n[0]}, nil
}
