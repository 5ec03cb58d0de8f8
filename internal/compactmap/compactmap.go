// Package compactmap rebuilds Go maps that have shrunk far below the size they once
// grew to. A Go map never gives back the table it grew to as its entries are deleted:
// an index of open intents that held 100,000 during a burst keeps a table for 100,000
// once they are decided, empty or not. Rebuilt at its present size, the map lets the
// collector take the old table.
package compactmap

// DefaultFloor is the size a map must have reached before it is ever rebuilt: a table
// of fewer entries is a few tens of KiB, not worth a copy.
const DefaultFloor = 1024

// Tracker follows one map's largest size since it was last built, and says when the map
// has shrunk enough to be rebuilt. Its zero value is ready, with DefaultFloor. It is
// not safe for concurrent use: it is kept beside its map, under the map's lock.
type Tracker struct {
	// Floor, when positive, replaces DefaultFloor.
	Floor int
	peak  int
}

// Grew records that the map now holds n entries; call it after an insert.
func (t *Tracker) Grew(n int) { t.peak = max(t.peak, n) }

// Shrunk reports whether a map now holding n entries is to be rebuilt, and if so counts
// it as rebuilt at n; call it after a delete. A map is rebuilt once it has held at least
// the floor and holds a quarter of its peak or less, so that the copies cost at most a
// third of the deletes that came before them.
func (t *Tracker) Shrunk(n int) bool {
	floor := t.Floor
	if floor <= 0 {
		floor = DefaultFloor
	}
	if t.peak < floor || n > t.peak/4 {
		return false
	}
	t.peak = n
	return true
}

// Rebuild returns a copy of m in a table sized to its entries. maps.Clone is not that:
// it may copy the table m grew to.
func Rebuild[M ~map[K]V, K comparable, V any](m M) M {
	out := make(M, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
