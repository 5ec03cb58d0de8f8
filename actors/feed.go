package actors

import (
	"sync"
	"sync/atomic"

	"github.com/intentd/intentd"
)

// feed holds the newest events for the subscribers without a filter, all at once. The
// bus appends each event once; each subscriber reads on from a position of its own.
// Handing every subscriber its own copy of each event (a channel send to each) cost the
// bus a lock and a cache miss per subscriber per event, about a sixth of a delivery's
// CPU with 2,000 streams open. With the ring the bus does nothing for a subscriber busy
// writing or gathering its events, which under load is nearly all of them; those
// waiting for their next event are woken together, by one closed channel. The entries
// every subscriber reads are the same few, so they stay in the cache.
//
// A subscriber that falls a whole ring behind finds its next entry overwritten and is
// cut off, as one whose buffer filled is: its reader resumes from the last id it saw,
// from the store. Subscribers with a filter are not fed from here (bus): every event
// would wake them, and those they skip would count towards their cut.
type feed struct {
	mask  uint64
	slots []atomic.Pointer[fedEvent]
	// head counts the events appended: the next goes to position head. It is stored
	// after the slot, so that a reader who sees it finds the slot written.
	head atomic.Uint64
	// wake is closed when the next event is appended, and replaced: a subscriber with
	// nothing to read waits on it.
	wake atomic.Pointer[chan struct{}]

	mu sync.Mutex
	// marks are closed when head reaches their position (Subscription.Filling).
	// Every mark lies at most a ring ahead of head, so at most that many are held.
	marks map[uint64]chan struct{}
}

// fedEvent is an event at its position in the feed; the position tells a reader
// whether the slot still holds the event it came for.
type fedEvent struct {
	pos uint64
	ev  intentd.Event
}

// closedChan is a channel that is already closed.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// newFeed makes a feed of at least size events (a power of two).
func newFeed(size int) *feed {
	n := 1
	for n < size {
		n <<= 1
	}
	f := &feed{mask: uint64(n - 1), slots: make([]atomic.Pointer[fedEvent], n), marks: make(map[uint64]chan struct{})}
	wake := make(chan struct{})
	f.wake.Store(&wake)
	return f
}

// size is how many events the feed holds.
func (f *feed) size() uint64 { return f.mask + 1 }

// append adds an event. Only the bus calls it, one event at a time, in id order.
func (f *feed) append(ev intentd.Event) {
	h := f.head.Load()
	f.slots[h&f.mask].Store(&fedEvent{pos: h, ev: ev})
	f.head.Store(h + 1)
	next := make(chan struct{})
	close(*f.wake.Swap(&next))
	f.mu.Lock()
	if c, ok := f.marks[h+1]; ok {
		close(c)
		delete(f.marks, h+1)
	}
	f.mu.Unlock()
}

// at returns the event at pos: nil when none is there yet, and overrun true when the
// ring has gone past it.
func (f *feed) at(pos uint64) (e *fedEvent, overrun bool) {
	if pos >= f.head.Load() {
		return nil, false
	}
	e = f.slots[pos&f.mask].Load()
	if e == nil || e.pos != pos {
		return nil, true
	}
	return e, false
}

// waiter is closed when the next event is appended. Take it before looking at head,
// so that an event appended between the two is not missed.
func (f *feed) waiter() <-chan struct{} { return *f.wake.Load() }

// mark is closed once head reaches pos: once that many events have been appended.
func (f *feed) mark(pos uint64) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pos <= f.head.Load() {
		return closedChan
	}
	c, ok := f.marks[pos]
	if !ok {
		c = make(chan struct{})
		f.marks[pos] = c
	}
	return c
}
