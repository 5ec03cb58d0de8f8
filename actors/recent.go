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
// after passivation reads the store, which by then may hold later transitions. A
// cluster's members hold nothing here: an intent's proposal is as likely to reach any
// member as the one that wrote its create, and the member that takes it reads the store.
//
// The snapshots are held in two generations of half the budget each. When the newer is
// full it becomes the older and the older is dropped whole: a put is one map insert.
// Keeping the order of puts to drop the oldest one by one cost a put three lookups in a
// map of tens of thousands of snapshots, each a miss of the processor's caches, and
// 1.5 % of intake's CPU. At least the newest half of the budget's worth is held.
type recentIntents struct {
	mu       sync.Mutex
	budget   int
	cur, old recentGeneration
}

type recentGeneration struct {
	m     map[string]recentIntent
	bytes int
}

type recentIntent struct {
	snap *snapshot
	size int
}

func newRecentIntents(budget int) *recentIntents {
	return &recentIntents{budget: budget, cur: recentGeneration{m: make(map[string]recentIntent)}}
}

// snapshotWeight is what a held snapshot costs beyond its authored intent: the struct
// and its map entry.
const snapshotWeight = 400

// put holds snap, the snapshot of an intent just written, for its first actor. An
// intent's snapshot is put once, when the intent is created; were one put again while
// held, its first size would count until its generation is dropped.
func (r *recentIntents) put(snap *snapshot) {
	if r == nil || r.budget <= 0 {
		return
	}
	size := snapshotWeight + len(snap.ID) + len(snap.PolicyID) + len(snap.Authored) + len(snap.Request)
	if size > r.budget/2 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur.bytes+size > r.budget/2 {
		r.old = r.cur
		r.cur = recentGeneration{m: make(map[string]recentIntent, len(r.old.m))}
	}
	r.cur.m[snap.ID] = recentIntent{snap: snap, size: size}
	r.cur.bytes += size
}

// take hands over the snapshot held for id, once; nil when none is held.
func (r *recentIntents) take(id string) *snapshot {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := r.cur.take(id)
	if older := r.old.take(id); snap == nil {
		snap = older
	}
	return snap
}

func (g *recentGeneration) take(id string) *snapshot {
	e, ok := g.m[id]
	if !ok {
		return nil
	}
	delete(g.m, id)
	g.bytes -= e.size
	return e.snap
}

// stats reports the snapshots held and the bytes they count for.
func (r *recentIntents) stats() (n, bytes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cur.m) + len(r.old.m), r.cur.bytes + r.old.bytes
}
