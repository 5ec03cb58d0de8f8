package compactmap

import (
	"runtime"
	"strconv"
	"testing"
)

// TestTracker walks a map's size up and down and checks when a rebuild is called for.
func TestTracker(t *testing.T) {
	type step struct {
		grow    bool // an insert to n, else a delete to n
		n       int
		rebuild bool // what Shrunk says after a delete
	}
	cases := []struct {
		name  string
		floor int
		steps []step
	}{
		{"below the floor never", 0, []step{{true, 1000, false}, {false, 0, false}}},
		{"at the floor, a quarter left", 0, []step{{true, 1024, false}, {false, 257, false}, {false, 256, true}}},
		{"rebuilt once, then counted from its new size", 0, []step{
			{true, 4096, false}, {false, 1025, false}, {false, 1024, true}, {false, 300, false}, {true, 2000, false}, {false, 500, true}}},
		{"a rebuilt map emptied is rebuilt again", 0, []step{{true, 4096, false}, {false, 1024, true}, {false, 0, true}}},
		{"a floor of its own", 8, []step{{true, 8, false}, {false, 3, false}, {false, 2, true}, {false, 0, false}}},
		{"growing again keeps the peak", 0, []step{{true, 2048, false}, {false, 1000, false}, {true, 1500, false}, {false, 512, true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := Tracker{Floor: c.floor}
			for i, s := range c.steps {
				if s.grow {
					tr.Grew(s.n)
					continue
				}
				if got := tr.Shrunk(s.n); got != s.rebuild {
					t.Fatalf("step %d: Shrunk(%d) = %v, want %v", i, s.n, got, s.rebuild)
				}
			}
		})
	}
}

// TestRebuild checks that a rebuilt map holds the same entries and lets the collector
// take the table the old one grew to.
func TestRebuild(t *testing.T) {
	r, before := shrunkAndRebuilt()
	after := heapInUse()
	if len(r) != 10 {
		t.Fatalf("rebuilt map holds %d entries, want 10", len(r))
	}
	for i := 199_990; i < 200_000; i++ {
		if r[strconv.Itoa(i)] == nil {
			t.Fatalf("entry %d lost", i)
		}
	}
	// The table of 200,000 entries is several MiB; a map of 10 is a few hundred bytes.
	if before-after < 1<<20 {
		t.Errorf("heap in use %d before the rebuild, %d after: the old table was not let go", before, after)
	}
}

// shrunkAndRebuilt grows a map to 200,000 entries, deletes all but 10, and returns it
// rebuilt, with the heap in use before the rebuild; the old map is garbage once it
// returns.
func shrunkAndRebuilt() (map[string]*[64]byte, uint64) {
	m := make(map[string]*[64]byte)
	for i := range 200_000 {
		m[strconv.Itoa(i)] = new([64]byte)
	}
	for i := range 199_990 {
		delete(m, strconv.Itoa(i))
	}
	before := heapInUse()
	return Rebuild(m), before
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
