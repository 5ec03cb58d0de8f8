package actors

import (
	"sync"
	"testing"

	"github.com/intentd/intentd"
)

func TestFeedSize(t *testing.T) {
	for _, tt := range []struct{ asked, want int }{{1, 1}, {3, 4}, {4, 4}, {1000, 1024}, {8192, 8192}} {
		if got := newFeed(tt.asked).size(); got != uint64(tt.want) {
			t.Errorf("newFeed(%d).size() = %d, want %d", tt.asked, got, tt.want)
		}
	}
}

func TestFeedAt(t *testing.T) {
	f := newFeed(4)
	for id := uint64(1); id <= 6; id++ {
		f.append(intentd.Event{ID: id * 10})
	}
	// Positions 0 and 1 are overwritten by 4 and 5; 2..5 are held; 6 is not there yet.
	tests := []struct {
		pos     uint64
		wantID  uint64 // 0: no event
		overrun bool
	}{
		{0, 0, true},
		{1, 0, true},
		{2, 30, false},
		{5, 60, false},
		{6, 0, false},
		{100, 0, false},
	}
	for _, tt := range tests {
		e, overrun := f.at(tt.pos)
		var id uint64
		if e != nil {
			id = e.ev.ID
		}
		if id != tt.wantID || overrun != tt.overrun {
			t.Errorf("at(%d) = event %d, overrun %v; want %d, %v", tt.pos, id, overrun, tt.wantID, tt.overrun)
		}
	}
}

func TestFeedWaiterAndMarks(t *testing.T) {
	f := newFeed(8)
	wake := f.waiter()
	m2, m2again, m1 := f.mark(2), f.mark(2), f.mark(1)
	if m2 != m2again {
		t.Error("two marks at one position are two channels")
	}
	isClosed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	if isClosed(wake) || isClosed(m1) || isClosed(m2) {
		t.Fatal("closed before any event")
	}
	f.append(intentd.Event{ID: 1})
	if !isClosed(wake) || !isClosed(m1) || isClosed(m2) {
		t.Fatalf("after one event: waiter closed %v, mark 1 %v, mark 2 %v; want true, true, false", isClosed(wake), isClosed(m1), isClosed(m2))
	}
	if isClosed(f.waiter()) {
		t.Fatal("the next waiter is closed before the next event")
	}
	f.append(intentd.Event{ID: 2})
	if !isClosed(m2) {
		t.Fatal("mark 2 open after two events")
	}
	if !isClosed(f.mark(1)) {
		t.Fatal("a mark already passed is open")
	}
	if len(f.marks) != 0 {
		t.Fatalf("%d marks held after head passed them all", len(f.marks))
	}
}

// TestFeedReadersWhileAppending has readers follow the feed while it is appended to, as
// subscribers do; run with -race, it checks that a reader sees each event it did not
// lose to an overrun once, whole and in order.
func TestFeedReadersWhileAppending(t *testing.T) {
	const events, readers = 20000, 4
	f := newFeed(64)
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pos, last uint64
			for last < events {
				wake := f.waiter()
				e, overrun := f.at(pos)
				switch {
				case overrun:
					// Fell a ring behind: start again at the oldest held, as a
					// reader resuming from the store would end up.
					pos = f.head.Load() - f.size()/2
					continue
				case e == nil:
					<-wake
					continue
				}
				if e.pos != pos || e.ev.ID <= last || e.ev.ID != pos+1 {
					t.Errorf("at %d: event %d at position %d after %d", pos, e.ev.ID, e.pos, last)
					return
				}
				last = e.ev.ID
				pos++
			}
		}()
	}
	for id := uint64(1); id <= events; id++ {
		f.append(intentd.Event{ID: id})
	}
	wg.Wait()
}
