package benchcpu

import (
	"syscall"
	"testing"
)

// Faults is the process's count of minor page faults so far: first touches of memory
// it mapped (the Go heap growing, Pebble's memtables, files read through the page
// cache), each a trap into the kernel that zeroes or maps a page.
func Faults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Minflt
}

// ReportFaults reports the minor page faults since start per operation.
func ReportFaults(b *testing.B, start int64, what string) {
	b.ReportMetric(float64(Faults()-start)/float64(b.N), "faults/"+what)
}
