package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites writes from many goroutines while reading; the race detector
// is what checks the locking, the count what checks that nothing is lost.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "line\n"); n != 800 {
		t.Errorf("%d lines, want 800", n)
	}
	c := b.Bytes()
	c[0] = 'X'
	if b.String()[0] != 'l' {
		t.Error("Bytes gave the buffer itself, not a copy")
	}
}
