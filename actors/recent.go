package actors

import "sync"

// recentIntents holds the snapshots of the newest intents created without an actor,
// within a budget of bytes, until their actor first asks for them. A proposal that
// follows its intent's create soon (an agent that was waiting for the intent to exist)
// then starts its actor from memory: reading the snapshot back was the largest part of
// what the engine added to a proposal, a Pebble read that misses the block cache (a
// table just flushed is not in it) and the JSON of the snapshot, about 85 µs of
// server CPU in the profile of decide at 1,000 proposals a second.
//
// It is only a shortcut past the store, which stays the record: the snapshot given to
// an actor is the one just written, and is given once, so that an actor coming back
// after passivation reads the store, which by then may hold later transitions. The
// oldest go first when the budget is spent. In a cluster creates go to the intent's
// owner, whose actor keeps the snapshot itself, and nothing is held here.
type recentIntents struct {
	mu     sync.Mutex
	budget int
	used   int
	seq    uint64
	m      map[string]recentIntent
	order  []recentPlace // in the order put; those taken or put again stay until their turn
}

type recentIntent struct {
	snap *snapshot
	size int
	seq  uint64 // of its place in the order
}

type recentPlace struct {
	id  string
	seq uint64
}

func newRecentIntents(budget int) *recentIntents {
	return &recentIntents{budget: budget, m: make(map[string]recentIntent)}
}

// snapshotWeight is what a held snapshot costs beyond its authored intent: the struct,
// its map entry and its place in the order.
const snapshotWeight = 400

// put holds snap, the snapshot of an intent just written, for its first actor.
func (r *recentIntents) put(snap *snapshot) {
	if r == nil || r.budget <= 0 {
		return
	}
	size := snapshotWeight + len(snap.ID) + len(snap.PolicyID) + len(snap.Authored) + len(snap.Request)
	if size > r.budget {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.m[snap.ID]; ok {
		r.used -= old.size
	}
	r.seq++
	r.m[snap.ID] = recentIntent{snap: snap, size: size, seq: r.seq}
	r.order = append(r.order, recentPlace{id: snap.ID, seq: r.seq})
	r.used += size
	for r.used > r.budget {
		p := r.order[0]
		r.order[0] = recentPlace{}
		r.order = r.order[1:]
		if e, ok := r.m[p.id]; ok && e.seq == p.seq {
			r.used -= e.size
			delete(r.m, p.id)
		}
	}
	// Places whose snapshot was taken stay in the order until their turn; when they
	// outnumber the held ones, and when the order's array holds mostly places already
	// passed, the order is copied with only what is held, so that it stays within the
	// budget's worth whatever the pace of takes.
	if len(r.order) > 2*len(r.m)+1024 || cap(r.order) > 2*len(r.order)+1024 {
		live := make([]recentPlace, 0, len(r.m)+len(r.m)/4)
		for _, p := range r.order {
			if e, ok := r.m[p.id]; ok && e.seq == p.seq {
				live = append(live, p)
			}
		}
		r.order = live
	}
}

// take hands over the snapshot held for id, once; nil when none is held.
func (r *recentIntents) take(id string) *snapshot {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[id]
	if !ok {
		return nil
	}
	delete(r.m, id)
	r.used -= e.size
	return e.snap
}

// stats reports the snapshots held and the bytes they count for.
func (r *recentIntents) stats() (n, bytes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m), r.used
}
