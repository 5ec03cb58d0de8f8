// Package benchcpu measures the CPU time a benchmark's operations cost the whole
// process. On a host shared with other work, a benchmark's wall time per operation also
// counts the time it waited for a core; the CPU time, which includes the collector's and
// the store's work on other goroutines, moves much less with the neighbours, and it is
// what the service's targets are stated in.
package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

// Now is the CPU time, user and system, the process has used so far; 0 where the
// platform does not say.
func Now() time.Duration {
	ru := usage()
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Faults is the process's count of minor page faults so far: first touches of memory
// it mapped (the Go heap growing, Pebble's memtables), each a trap into the kernel that
// zeroes or maps a page; 0 where the platform does not say.
func Faults() int64 { return usage().Minflt }

// usage is the process's resource usage so far; zero where the platform does not say.
func usage() syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return syscall.Rusage{}
	}
	return ru
}

// Report reports the CPU time per operation since start, in nanoseconds, as
// "cpu-ns/op".
func Report(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(Now()-start)/float64(b.N), "cpu-ns/op")
}

// ReportMicros reports the CPU time per operation since start in microseconds, as
// "cpu-µs/"+what.
func ReportMicros(b *testing.B, start time.Duration, what string) {
	b.ReportMetric(float64((Now()-start).Microseconds())/float64(b.N), "cpu-µs/"+what)
}

// ReportFaults reports the minor page faults per operation since start, as
// "faults/"+what.
func ReportFaults(b *testing.B, start int64, what string) {
	b.ReportMetric(float64(Faults()-start)/float64(b.N), "faults/"+what)
}
