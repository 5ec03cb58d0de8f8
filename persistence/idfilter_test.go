package persistence

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/intentd/intentd"
)

// TestIDFilter checks the filter's one promise, no false "not stored", across the
// growth from one filter to several, and that it still rules out nearly every new id.
func TestIDFilter(t *testing.T) {
	const first = 1024
	f := newIDFilter(first)
	f.ready.Store(true)
	const n = 8 * first // four filters: 1k, 2k, 4k, then part of 8k
	for i := range n {
		f.add(fmt.Sprintf("stored-%d", i))
	}
	if len(f.filters) != 4 {
		t.Errorf("filters = %d after %d ids, want 4", len(f.filters), n)
	}
	for i := range n {
		if id := fmt.Sprintf("stored-%d", i); !f.mayBeStored(id) {
			t.Fatalf("%s was added but the filter rules it out", id)
		}
	}
	wrong := 0
	const probes = 100_000
	for i := range probes {
		if f.mayBeStored(fmt.Sprintf("new-%d", i)) {
			wrong++
		}
	}
	// Four filters at 0.1 % each: at most about 0.4 %; 1 % leaves room for chance.
	if rate := float64(wrong) / probes; rate > 0.01 {
		t.Errorf("false-positive rate %.4f, want under 0.01", rate)
	}

	var unready idFilter
	if !unready.mayBeStored("anything") {
		t.Error("a filter whose scan has not ended must answer maybe")
	}
}

// TestIDFilterAcrossReopen checks that ids stored before a re-open are refused whether
// the create arrives before the scan of stored ids has ended or after.
func TestIDFilterAcrossReopen(t *testing.T) {
	fs := NewMemFS()
	s := openMem(t, fs)
	s.PutPolicy(ctx, "P", []byte{7}, []byte("src"))
	const n = 2000
	for i := range n {
		mustCreate(t, s, fmt.Sprintf("i%d", i), "P", "x")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		ready bool
	}{{"scan ended", true}, {"scan not ended", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := openMem(t, fs)
			defer s.Close()
			<-s.idsLoaded
			if !s.ids.ready.Load() {
				t.Fatal("the scan of stored ids ended without making the filter ready")
			}
			s.ids.ready.Store(tc.ready)
			for i := range n {
				id := fmt.Sprintf("i%d", i)
				if err := s.CreateIntent(ctx, id, "P", []byte("again"), t0); !errors.Is(err, intentd.ErrExists) {
					t.Fatalf("create of stored %s = %v, want intentd.ErrExists", id, err)
				}
				if got, _ := s.Intent(ctx, id); string(got) != "x" {
					t.Fatalf("%s = %q after a refused create, want the first write", id, got)
				}
			}
			fresh := "fresh-" + tc.name
			mustCreate(t, s, fresh, "P", "y")
			if err := s.CreateIntent(ctx, fresh, "P", []byte("again"), t0); !errors.Is(err, intentd.ErrExists) {
				t.Fatalf("second create of %s = %v, want intentd.ErrExists", fresh, err)
			}
		})
	}
}

// TestIDFilterCreatesDuringScan races creates against the scan of stored ids at open:
// once the scan has ended, every id, stored before or during it, must be refused.
func TestIDFilterCreatesDuringScan(t *testing.T) {
	const stored, writers, each = 5000, 4, 200
	s := reopenedWith(t, stored, "old")
	defer s.Close()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := s.CreateIntent(ctx, fmt.Sprintf("new%d-%d", w, i), "P", []byte("y"), t0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	<-s.idsLoaded
	if !s.ids.ready.Load() {
		t.Fatal("the scan ended without making the filter ready")
	}
	check := func(id string) {
		if err := s.CreateIntent(ctx, id, "P", []byte("again"), t0); !errors.Is(err, intentd.ErrExists) {
			t.Fatalf("create of stored %s = %v, want intentd.ErrExists", id, err)
		}
	}
	for i := range stored {
		check(fmt.Sprintf("old%d", i))
	}
	for w := range writers {
		for i := range each {
			check(fmt.Sprintf("new%d-%d", w, i))
		}
	}
}
