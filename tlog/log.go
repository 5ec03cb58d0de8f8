package tlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/pebbledir"
	"github.com/intentd/intentd/internal/pebbleevents"
	iproof "github.com/intentd/intentd/proof"
)

// TileHeight is the height of a tile: 8, as tlog-tiles fixes it, so a full tile holds
// TileWidth hashes and a full entry bundle TileWidth entries.
const (
	TileHeight = 8
	TileWidth  = 1 << TileHeight
)

// The key space of the log's database, one byte of prefix a table.
const (
	prefixNode  = 'n' // n<level byte><8-byte index> -> 32-byte hash of a perfect subtree
	prefixEntry = 'e' // e<8-byte leaf index> -> the entry (intentd.MarshalLogEntry)
	prefixLeaf  = 'i' // i<intent id> -> 8-byte leaf index of its outcome
	keyState    = "mstate"
	keyCP       = "mcheckpoint"
)

// ErrGap is the error of a log that cannot go on: the event stream no longer holds
// the events after its last leaf, so that any tree it built from what remains would
// be another history than the one it signed.
var ErrGap = errors.New("tlog: the events after the log's last leaf are no longer retained")

// Options configure Open.
type Options struct {
	// Dir is the folder of the log's database; created when missing.
	Dir string
	// Key signs the checkpoints: the service's receipt key (docs/proofs.md says why).
	Key *crypto.SigningKey
	// Origin is the checkpoints' first line and the name of their signature;
	// DefaultOrigin(Key) when empty.
	Origin string
	// Interval is the longest a checkpoint lags the leaves while outcomes come; 1 s
	// by default.
	Interval time.Duration
	// Logger receives what the log does wrong; nil discards it.
	Logger *slog.Logger
	// Store is where the log keeps its entries beside the events, for every node to
	// rebuild from once the events are pruned (intentd.LogStore); nil keeps them in
	// Dir only, and a log that lost Dir then rebuilds only while all events are
	// retained.
	Store intentd.LogStore
	// AcceptKeyChange lets the log go on under Key when its newest checkpoint of one
	// leaf or more was signed by another key: the key was changed on purpose. Without
	// it Open refuses such a log with a *KeyError, since a key changed in silence (a
	// key file garbled, or another put in its place) would go on signing the log's
	// history under a new name. Either way a checkpoint of no leaves, which commits to
	// nothing, is signed again under Key.
	AcceptKeyChange bool
	// Witnesses, when set, is the C2SP tlog-policy of the witnesses the log asks to
	// cosign its checkpoints (witness.go); nil: no witness is asked.
	Witnesses *iproof.WitnessPolicy
	// WitnessInterval is how often the witnesses are asked to cosign the newest
	// checkpoint, when it grew; DefaultWitnessInterval when zero.
	WitnessInterval time.Duration
	// WitnessClient makes the requests to the witnesses; nil: a client with a time-out
	// of WitnessTimeout.
	WitnessClient *http.Client
}

// OriginError is the error of Open for a log whose newest checkpoint of one leaf or
// more names another origin than Options.Origin, signed by Options.Key: an origin is
// the log's name for good, under which readers and witnesses know it.
type OriginError struct {
	// Dir is the log's folder.
	Dir string
	// Size is the number of leaves the checkpoint commits to.
	Size uint64
	// Origin is the checkpoint's origin, the log's name.
	Origin string
	// Want is the origin Open was given.
	Want string
}

func (e *OriginError) Error() string {
	return fmt.Sprintf("tlog: the log in %s holds a checkpoint of %d leaves under the origin %s, not %s",
		e.Dir, e.Size, e.Origin, e.Want)
}

// KeyError is the error of Open for a log whose newest checkpoint of one leaf or more
// was signed by another key than Options.Key, without Options.AcceptKeyChange.
type KeyError struct {
	// Dir is the log's folder.
	Dir string
	// Size is the number of leaves the checkpoint commits to.
	Size uint64
	// Origin is the checkpoint's origin, which names the key that signed it unless the
	// origin was set (DefaultOrigin).
	Origin string
	// KeyID is the id of Options.Key.
	KeyID string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("tlog: the log in %s holds a checkpoint of %d leaves, origin %s, signed by another key than %s",
		e.Dir, e.Size, e.Origin, e.KeyID)
}

// DefaultOrigin is the origin of a log signed by key: the same on every member of a
// cluster, which all sign with one key.
func DefaultOrigin(key *crypto.SigningKey) string { return "intentd/" + key.ID() }

// Log is one node's copy of the transparency log. Its reads (checkpoint, tiles,
// entries, inclusion proofs) may run on any goroutine while Run appends.
type Log struct {
	db *pebble.DB
	// unwatchDisk stops the watch for slow operations on the log's files.
	unwatchDisk io.Closer

	key      *crypto.SigningKey
	origin   string
	signer   note.Signer
	verifier string
	interval time.Duration
	log      *slog.Logger
	store    intentd.LogStore

	// mu is held by the one writer while it appends, and by a signer reading the root.
	mu        sync.Mutex
	rng       *compact.Range
	lastEvent uint64
	size      atomic.Uint64

	// signMu makes one checkpoint at a time; cp is the newest, read without it.
	signMu sync.Mutex
	cp     atomic.Pointer[checkpoint]
	// stopped is set when the log met a gap and appends no more.
	stopped atomic.Bool
	// following is set while the log holds a subscription to the events.
	following atomic.Bool

	// check is a checkpoint this node signed of more leaves than it holds (written
	// before a crash took the leaves, or before its folder was restored from an older
	// copy): the tree rebuilt must have its root at its size. Under mu.
	check *checkpoint
	// shared is how many leaves the store is known to hold, owned by shareLoop.
	shared uint64
	// wit asks the witnesses for cosignatures; nil without Options.Witnesses.
	wit *witnessing
}

var rf = &compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}

// Open opens (or makes) the log in opts.Dir and signs a checkpoint of what it holds,
// if it has none.
func Open(opts Options) (*Log, error) {
	if opts.Key == nil {
		return nil, errors.New("tlog: Options.Key is required")
	}
	if opts.Origin == "" {
		opts.Origin = DefaultOrigin(opts.Key)
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	signer, vkey, err := newSigner(opts.Origin, opts.Key)
	if err != nil {
		return nil, err
	}
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	// The files' writes and syncs are watched, and one still running after 5 s goes to
	// the listener's slow-disk line, as the store's do. The log holds the watch's closer
	// itself: the watch Pebble makes when given no FS outlives a failed open.
	events := pebbleevents.Listener(opts.Logger, "tlog")
	fs, unwatch := vfs.WithDiskHealthChecks(vfs.Default, diskSlowAfter, events.DiskSlow)
	db, err := pebbledir.Open(opts.Dir, &pebble.Options{
		Logger: pebbleLogger{opts.Logger, opts.Dir}, Cache: cache, FS: fs, EventListener: events,
		MemTableSize: memTableSize, L0CompactionThreshold: l0Tables, L0StopWritesThreshold: 4 * l0Tables,
		LBaseMaxBytes: baseLevelBytes,
	})
	if err != nil {
		unwatch.Close()
		if errors.Is(err, pebbledir.ErrDamaged) {
			// Unlike the store's, the log's folder holds nothing that is not kept
			// elsewhere: the events and the store's entries make it again.
			return nil, fmt.Errorf("tlog: open %s: %w: remove the folder, with the server stopped, and start again: "+
				"the log is rebuilt from the store (docs/operating.md, \"The data folder\")", opts.Dir, err)
		}
		return nil, fmt.Errorf("tlog: open %s: %w", opts.Dir, err)
	}
	l := &Log{db: db, unwatchDisk: unwatch, key: opts.Key, origin: opts.Origin, signer: signer, verifier: vkey, interval: opts.Interval, log: opts.Logger, store: opts.Store}
	if err := l.load(opts.Dir, opts.AcceptKeyChange); err != nil {
		l.Close()
		return nil, err
	}
	if opts.Witnesses != nil {
		if err := opts.Witnesses.CheckLogKey(l.origin, l.key.PublicKey()); err != nil {
			l.Close()
			return nil, fmt.Errorf("tlog: %w", err)
		}
		l.wit = newWitnessing(l, opts)
	}
	return l, nil
}

// cacheBytes and memTableSize bound the memory of the log's Pebble, which it allocates
// outside the Go heap and keeps once grown: with Pebble's default memtable (4 MiB) and
// a 32 MiB cache, a cluster member's memory outside the heap grew by 4.5 MiB with its
// first 10,000 intents and by 2 to 3 MiB with each 10,000 after (docs/cluster.md,
// "Memory after a load"). The log needs little of either: what its proofs read over
// and over is the upper levels of the tree (a tile of level 1 covers 65,536 leaves)
// and the newest tiles, which its appends read too; a proof of an old leaf reads its
// tile once. Pebble keeps a memtable being written and one being flushed, and the C
// allocator keeps what they freed for the next: 1 MiB memtables left a member 1 MiB
// more after a load than 256 KiB ones, which took it past 1.20 times its memory before
// the load; 2 MiB ones, 3 MiB more. Pebble counts its memtables against the cache, the
// one kept for reuse too, so about 3.5 MiB of it hold blocks. A cache of 1 MiB saved no
// more than the runs' spread and made BenchmarkInclusion (random leaves of a million) 15
// to 35 % slower.
//
// A leaf is keyed by its intent's id as well as by its index, and its key of id is
// random, so every table a flush makes spans the keys of every table below it, and a
// compaction of level 0 rewrites them all. With small memtables the log flushes each
// batch of a tile's leaves (Pebble flushes a batch of half its memtable or more at
// once), so what a compaction costs is set by how many flushes it takes at once. Pebble
// compacts level 0 once its overlapping tables reach half l0Tables: two at its default
// of four, where a leaf cost 32 to 37 µs of CPU in a log of 25,600 leaves, 63 to 66 in one
// of 102,400 and 144 on average over a million, growing with the log; eight at 16, where
// it cost 16 to 19, 22 to 24 and 39 (BenchmarkAppendCPU, the base level at Pebble's
// default; baseLevelBytes below). 32 saved little more. A read of an intent's leaf (a
// proof) then looks through up to eight tables more (the log has no bloom filters): 33
// to 48 µs where it took 30.
const (
	cacheBytes   = 4 << 20
	memTableSize = 256 << 10
	// l0Tables is Pebble's L0CompactionThreshold for the log, whose level 0 is compacted
	// once half as many tables overlap there; writes stop at four times as many, for
	// compactions to catch up.
	l0Tables = 16
	// baseLevelBytes is the size of the level below level 0 past which Pebble moves
	// tables one level further down (Pebble's LBaseMaxBytes). At Pebble's default of
	// 64 MiB the log's keys of ids stay in that one level until there are 64 MiB of
	// them, and since they are random, each compaction of level 0 rewrites nearly all
	// of it: the bytes compacted a leaf grow with the log. At 1 MiB Pebble keeps more
	// levels, each ten times the one above: a compaction out of level 0 rewrites the
	// small level below it, and data moves down a level at a time, so the bytes
	// compacted a leaf grow with the number of levels rather than with the log's size.
	// In a log of a million leaves a leaf then cost 37 µs of CPU where it cost 61, with
	// 1,710 bytes compacted where it had 3,260 (BenchmarkAppendCPU); in logs of up to
	// 25,600 leaves, as before. A proof reads no slower (BenchmarkInclusion, its tables
	// compacted into more levels: 74 to 77 µs against 82 to 87). A log made before
	// opens as it is, and Pebble moves its tables into the new levels as it compacts.
	baseLevelBytes = 1 << 20
)

// diskSlowAfter is how long a file operation of the log runs before it is logged as
// slow: Pebble's own default, and the store's.
const diskSlowAfter = 5 * time.Second

// load reads the log's state: its size, the last event it holds, the compact range
// of its tree and its newest checkpoint, which it signs again when another key or
// origin signed it, if that may be.
func (l *Log) load(dir string, acceptKeyChange bool) error {
	var size uint64
	v, closer, err := l.db.Get([]byte(keyState))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return fmt.Errorf("tlog: read state: %w", err)
	default:
		if len(v) != 16 {
			closer.Close()
			return fmt.Errorf("tlog: state is %d bytes, want 16", len(v))
		}
		size, l.lastEvent = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
		closer.Close()
	}
	ids := compact.RangeNodes(0, size, nil)
	hashes, err := l.nodes(ids)
	if err != nil {
		return fmt.Errorf("tlog: read the tree's right edge: %w", err)
	}
	if l.rng, err = rf.NewRange(0, size, hashes); err != nil {
		return fmt.Errorf("tlog: %w", err)
	}
	l.size.Store(size)

	v, closer, err = l.db.Get([]byte(keyCP))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		_, err := l.publish()
		return err
	case err != nil:
		return fmt.Errorf("tlog: read checkpoint: %w", err)
	}
	defer closer.Close()
	var c log.Checkpoint
	if _, err := c.Unmarshal(v); err != nil {
		return fmt.Errorf("tlog: stored checkpoint: %w", err)
	}
	if c.Size > size {
		// The leaves after the checkpoint were not yet on disk when the node
		// stopped; they come again from the event stream, the same.
		l.log.Warn("the log's checkpoint is ahead of its leaves; they are rebuilt from the events, or from the store", "checkpoint", c.Size, "leaves", size)
	}
	cp := &checkpoint{size: c.Size, root: c.Hash, note: append([]byte(nil), v...)}
	if _, err := iproof.ParseCheckpoint(v, c.Origin, l.key.PublicKey()); err != nil {
		if c.Size > 0 && !acceptKeyChange {
			return &KeyError{Dir: dir, Size: c.Size, Origin: c.Origin, KeyID: l.key.ID()}
		}
		if c.Size > 0 {
			// Whoever watches the log sees a new key from now on; the log's own
			// line says when and why.
			l.log.Warn("the transparency log's checkpoints were signed by another key; it goes on under the key it has now",
				"checkpoint_origin", c.Origin, "origin", l.origin, "key_id", l.key.ID(), "leaves", c.Size)
		}
		if cp, err = l.sign(c.Size, c.Hash); err != nil {
			return err
		}
	} else if c.Origin != l.origin {
		// The same key under another origin (Options.Origin changed). A log of leaves
		// keeps its name: readers and witnesses know it by it, and under a new one its
		// history would start again for them, unseen. An empty log commits to nothing.
		if c.Size > 0 {
			return &OriginError{Dir: dir, Size: c.Size, Origin: c.Origin, Want: l.origin}
		}
		if cp, err = l.sign(c.Size, c.Hash); err != nil {
			return err
		}
	}
	if c.Size > size {
		l.check = cp
	}
	l.cp.Store(cp)
	if c.Size < size {
		_, err := l.publish()
		return err
	}
	return nil
}

// Close closes the database, then the watch of its files; Run must have returned.
func (l *Log) Close() error {
	err := l.db.Close()
	l.unwatchDisk.Close()
	return err
}

// Origin is the checkpoints' origin line.
func (l *Log) Origin() string { return l.origin }

// VerifierKey is the C2SP note verifier key of the checkpoints.
func (l *Log) VerifierKey() string { return l.verifier }

// Following reports whether the log holds a subscription to the events now, so
// that a count of subscribers can leave it out.
func (l *Log) Following() bool { return l.following.Load() }

// Size is the number of leaves the log holds (the newest checkpoint may cover fewer).
func (l *Log) Size() uint64 { return l.size.Load() }

// Checkpoint returns the checkpoint the log serves: without witnesses the newest
// signed; with them the newest whose cosignatures meet the policy's quorum, with
// their lines, or while none has, the one the witnesses were last asked about, with
// whatever cosignatures it got (witness.go).
func (l *Log) Checkpoint() []byte {
	if l.wit != nil {
		if c := l.wit.served(); c != nil {
			return c.note
		}
	}
	return l.cp.Load().note
}

// leaf is an event on its way into the log.
type leaf struct {
	eventID uint64
	entry   intentd.LogEntry
}

// append adds leaves in order, skipping any event the log already holds, and writes
// them with the nodes they complete in one batch. The batch is not synced: what a
// crash loses of it is rebuilt from the events, which the store keeps.
func (l *Log) append(leaves []leaf) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.db.NewBatch()
	defer b.Close()
	var key [10]byte
	visit := func(id compact.NodeID, hash []byte) {
		_ = b.Set(nodeKey(key[:0], id.Level, id.Index), hash, nil)
	}
	size, last, added := l.rng.End(), l.lastEvent, 0
	for _, lf := range leaves {
		if lf.eventID <= last {
			continue
		}
		data := intentd.MarshalLogEntry(lf.entry)
		_ = b.Set(indexKey(prefixEntry, size), data, nil)
		_ = b.Set(append([]byte{prefixLeaf}, lf.entry.IntentID...), be64(size), nil)
		if err := l.rng.Append(rfc6962.DefaultHasher.HashLeaf(data), visit); err != nil {
			return fmt.Errorf("tlog: append: %w", err)
		}
		size, last, added = size+1, lf.eventID, added+1
		if l.check != nil && size == l.check.size {
			root, err := l.rng.GetRootHash(nil)
			if err != nil {
				return fmt.Errorf("tlog: root: %w", err)
			}
			if !bytes.Equal(root, l.check.root) {
				// What was appended is not written; the range in memory is not the disk's.
				l.stopped.Store(true)
				return fmt.Errorf("%w: the tree rebuilt has root %x at size %d, the checkpoint this log signed has %x",
					intentd.ErrLogFork, root, size, l.check.root)
			}
			l.check = nil
		}
	}
	if added == 0 {
		return nil
	}
	state := append(be64(size), be64(last)...)
	_ = b.Set([]byte(keyState), state, nil)
	if err := b.Commit(pebble.NoSync); err != nil {
		// The range in memory is ahead of the disk now; the node must start again
		// from what the disk holds.
		l.stopped.Store(true)
		return fmt.Errorf("tlog: write leaves: %w", err)
	}
	l.lastEvent = last
	l.size.Store(size)
	return nil
}

// nodes reads the hashes of perfect subtrees. One iterator seeks them in key order
// rather than a Get each: a proof's nodes lie on one path, so the seeks only move
// forward, and in a log of a million leaves this halves the time of a proof.
func (l *Log) nodes(ids []compact.NodeID) ([][]byte, error) {
	hashes := make([][]byte, len(ids))
	if len(ids) == 0 {
		return hashes, nil
	}
	order := make([]int, len(ids))
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		order[i], keys[i] = i, nodeKey(nil, id.Level, id.Index)
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: keys[order[0]], UpperBound: append(append([]byte(nil), keys[order[len(order)-1]]...), 0)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for _, i := range order {
		if !it.SeekGE(keys[i]) || !bytes.Equal(it.Key(), keys[i]) {
			if err := it.Error(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("node %d/%d: %w", ids[i].Level, ids[i].Index, pebble.ErrNotFound)
		}
		hashes[i] = append([]byte(nil), it.Value()...)
	}
	return hashes, nil
}

// Inclusion returns the log inclusion of an intent's outcome against the newest
// checkpoint, signing one first if the newest does not cover the leaf yet. It returns
// nil, nil when the outcome is not in the log (yet). With witnesses, the checkpoint is
// the newest that meets their quorum, as InclusionWitnessed chooses.
func (l *Log) Inclusion(intentID string) (*intentd.LogInclusion, error) {
	inc, _, err := l.InclusionWitnessed(context.Background(), intentID)
	return inc, err
}

// InclusionWitnessed is Inclusion, and with witnesses, whether its checkpoint meets
// their quorum (nil without witnesses). A leaf that no checkpoint meeting the quorum
// covers has the witnesses asked at once, at most once each onDemandEvery, and waits
// for their answers up to demandWait; if they do not give the quorum by then, the
// inclusion is against the newest checkpoint, and the second result says so.
func (l *Log) InclusionWitnessed(ctx context.Context, intentID string) (*intentd.LogInclusion, *intentd.LogWitnessing, error) {
	v, closer, err := l.db.Get(append([]byte{prefixLeaf}, intentID...))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("tlog: read leaf index: %w", err)
	}
	index := binary.BigEndian.Uint64(v)
	closer.Close()
	cp := l.cp.Load()
	if index >= cp.size {
		if cp, err = l.publish(); err != nil {
			return nil, nil, err
		}
	}
	var witnessed *intentd.LogWitnessing
	if l.wit != nil {
		var c *checkpoint
		c, witnessed = l.wit.covering(ctx, index)
		if c != nil {
			cp = c
		}
	}
	entry, err := l.get(indexKey(prefixEntry, index))
	if err != nil {
		return nil, nil, err
	}
	nodes, err := proof.Inclusion(index, cp.size)
	if err != nil {
		return nil, nil, fmt.Errorf("tlog: %w", err)
	}
	path, err := l.rehash(nodes)
	if err != nil {
		return nil, nil, fmt.Errorf("tlog: inclusion proof: %w", err)
	}
	return &intentd.LogInclusion{LeafIndex: index, Entry: entry, InclusionProof: path, Checkpoint: string(cp.note)}, witnessed, nil
}

// rehash reads the nodes of a proof and makes its hashes.
func (l *Log) rehash(nodes proof.Nodes) ([][]byte, error) {
	hashes, err := l.nodes(nodes.IDs)
	if err != nil {
		return nil, err
	}
	return nodes.Rehash(hashes, rfc6962.DefaultHasher.HashChildren)
}

func (l *Log) get(key []byte) ([]byte, error) {
	v, closer, err := l.db.Get(key)
	if err != nil {
		return nil, fmt.Errorf("tlog: read %q: %w", key, err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

// maxTileIndex is the largest tile index whose first leaf has a uint64 index: a path
// may name any uint64, and a larger one would wrap around to another tile's leaves.
const maxTileIndex = (1<<64-1)/TileWidth - 1

// errNotFound is the answer for a tile, bundle or leaf the log does not have.
func errNotFound(format string, args ...any) error {
	return intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, format, args...)
}

// readError is the error of a read of the log's database that failed (a damaged table,
// a disk that fails): an internal error, never a not-found, since the newest checkpoint
// may commit to what could not be read, and a reader told it is not in the log would
// take the log for one that lies.
func readError(what string, err error) error {
	return intentd.Internal("tlog: read "+what+": %w", err)
}

// Tile returns the hashes of a tile (tlog-tiles): width hashes of the tree's level
// TileHeight*level, from index*TileWidth. Full and partial tiles alike are served
// only once every hash in them exists, so that what is served never changes.
func (l *Log) Tile(level, index uint64, width int) ([]byte, error) {
	if level > 63/TileHeight || index > maxTileIndex { // level*TileHeight would overflow past it
		return nil, errNotFound("tile %d/%d is beyond any tree", level, index)
	}
	out := make([]byte, 0, width*32)
	var lo, hi [10]byte
	start := index * TileWidth
	it, err := l.db.NewIter(&pebble.IterOptions{
		LowerBound: nodeKey(lo[:0], uint(level*TileHeight), start),
		UpperBound: nodeKey(hi[:0], uint(level*TileHeight), start+uint64(width)),
	})
	if err != nil {
		return nil, readError("tile", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, it.Value()...)
	}
	if err := it.Error(); err != nil {
		return nil, readError("tile", err)
	}
	if len(out) != width*32 {
		return nil, errNotFound("tile %d/%d of width %d is not in the log", level, index, width)
	}
	return out, nil
}

// Entries returns an entry bundle (tlog-tiles): width entries from index*TileWidth,
// each after its length as a big-endian uint16.
func (l *Log) Entries(index uint64, width int) ([]byte, error) {
	if index > maxTileIndex {
		return nil, errNotFound("entry bundle %d is beyond any tree", index)
	}
	start := index * TileWidth
	it, err := l.db.NewIter(&pebble.IterOptions{
		LowerBound: indexKey(prefixEntry, start),
		UpperBound: indexKey(prefixEntry, start+uint64(width)),
	})
	if err != nil {
		return nil, readError("entry bundle", err)
	}
	defer it.Close()
	var out []byte
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		out = AppendBundle(out, it.Value())
		n++
	}
	if err := it.Error(); err != nil {
		return nil, readError("entry bundle", err)
	}
	if n != width {
		return nil, errNotFound("entry bundle %d of width %d is not in the log", index, width)
	}
	return out, nil
}

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func indexKey(prefix byte, i uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefix}, i)
}

func nodeKey(dst []byte, level uint, index uint64) []byte {
	dst = append(dst, prefixNode, byte(level))
	return binary.BigEndian.AppendUint64(dst, index)
}

// FatalMsg is the line the log's database leaves when it fails beyond what Pebble can
// go on from (its folder removed under it, a file it cannot write), just before the
// process ends.
const FatalMsg = "the transparency log's database failed, and intentd stops: start it again; " +
	"a log folder that was removed is rebuilt from the store, and one that is damaged is refused until it is removed, with the server stopped"

// pebbleLogger sends Pebble's lines to the service's log, its informational ones at
// debug level, where they are out of the way.
type pebbleLogger struct {
	log *slog.Logger
	dir string
}

func (p pebbleLogger) Infof(format string, args ...any) {
	p.log.Debug("tlog pebble: " + fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.log.Error("tlog pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf logs one line and ends the process, as the store's does: Pebble does not
// expect Fatalf to return, and a panic's goroutine dump would bury the line that says
// what to do. Pebble's message, which may span lines, is made one.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " ")
	p.log.Error(FatalMsg, "dir", p.dir, "err", msg)
	os.Exit(1)
}
