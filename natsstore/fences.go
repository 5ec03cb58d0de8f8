package natsstore

// fences are the entries of the intents a store wrote or read lately, kept while it
// does not follow the intents' records (scope.go): the fence of its next write to one
// of them, the write that follows a read within milliseconds, without a read of its
// own. They are bounded: two generations of fenceGeneration entries each, the older
// dropped when the newer fills, so that a node serving reads of many intents it never
// writes holds no more than a few hundred KiB for them. An entry gone costs the next
// write to its intent one read of the intent's last record; a stale one, a write
// refused and the record read again.
type fences struct {
	cur, old map[string]entry
}

// fenceGeneration is how many entries a generation holds.
const fenceGeneration = 4096

// get returns the entry of intent id, if one is held.
func (f *fences) get(id string) (entry, bool) {
	if e, ok := f.cur[id]; ok {
		return e, true
	}
	e, ok := f.old[id]
	return e, ok
}

// put holds e as intent id's entry unless a newer one is held; an entry of a finished
// intent (done, withdrawn or missing) drops what is held, as nothing is written after it.
func (f *fences) put(id string, e entry) {
	if cur, ok := f.get(id); ok && cur.seq > e.seq {
		return
	}
	if e.phase != phaseOpen && e.phase != phaseProcessing {
		f.drop(id, e.seq+1)
		return
	}
	if f.cur == nil || len(f.cur) >= fenceGeneration {
		f.old, f.cur = f.cur, make(map[string]entry, fenceGeneration)
	}
	delete(f.old, id)
	f.cur[id] = e
}

// drop forgets intent id's entry when its sequence is below the given one: a newer
// entry stays.
func (f *fences) drop(id string, below uint64) {
	if e, ok := f.cur[id]; ok && e.seq < below {
		delete(f.cur, id)
	}
	if e, ok := f.old[id]; ok && e.seq < below {
		delete(f.old, id)
	}
}

// clear forgets every entry.
func (f *fences) clear() { f.cur, f.old = nil, nil }

// len is how many entries are held.
func (f *fences) len() int { return len(f.cur) + len(f.old) }
