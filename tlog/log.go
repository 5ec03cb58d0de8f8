package tlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
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
}

// DefaultOrigin is the origin of a log signed by key: the same on every member of a
// cluster, which all sign with one key.
func DefaultOrigin(key *crypto.SigningKey) string { return "intentd/" + key.ID() }

// Log is one node's copy of the transparency log. Its reads (checkpoint, tiles,
// entries, inclusion proofs) may run on any goroutine while Run appends.
type Log struct {
	db       *pebble.DB
	key      *crypto.SigningKey
	origin   string
	signer   note.Signer
	verifier string
	interval time.Duration
	log      *slog.Logger

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
}

type checkpoint struct {
	size uint64
	note []byte
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
	// The cache holds the upper levels of the tree, which every proof reads.
	cache := pebble.NewCache(32 << 20)
	defer cache.Unref()
	db, err := pebble.Open(opts.Dir, &pebble.Options{Logger: pebbleLogger{opts.Logger}, Cache: cache})
	if err != nil {
		return nil, fmt.Errorf("tlog: open %s: %w", opts.Dir, err)
	}
	l := &Log{db: db, key: opts.Key, origin: opts.Origin, signer: signer, verifier: vkey, interval: opts.Interval, log: opts.Logger}
	if err := l.load(); err != nil {
		db.Close()
		return nil, err
	}
	return l, nil
}

// load reads the log's state: its size, the last event it holds, the compact range
// of its tree and its newest checkpoint.
func (l *Log) load() error {
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
		l.log.Warn("the log's checkpoint is ahead of its leaves; they are rebuilt from the events", "checkpoint", c.Size, "leaves", size)
	}
	l.cp.Store(&checkpoint{size: c.Size, note: append([]byte(nil), v...)})
	if c.Size < size {
		_, err := l.publish()
		return err
	}
	return nil
}

// Close closes the database; Run must have returned.
func (l *Log) Close() error { return l.db.Close() }

// Origin is the checkpoints' origin line.
func (l *Log) Origin() string { return l.origin }

// VerifierKey is the C2SP note verifier key of the checkpoints.
func (l *Log) VerifierKey() string { return l.verifier }

// Following reports whether the log holds a subscription to the events now, so
// that a count of subscribers can leave it out.
func (l *Log) Following() bool { return l.following.Load() }

// Size is the number of leaves the log holds (the newest checkpoint may cover fewer).
func (l *Log) Size() uint64 { return l.size.Load() }

// Checkpoint returns the newest signed checkpoint.
func (l *Log) Checkpoint() []byte { return l.cp.Load().note }

// publish signs a checkpoint of every leaf the log holds, unless the newest covers
// them already, and returns the newest.
func (l *Log) publish() (*checkpoint, error) {
	l.signMu.Lock()
	defer l.signMu.Unlock()
	cur := l.cp.Load()
	l.mu.Lock()
	size := l.rng.End()
	if cur != nil && cur.size >= size {
		l.mu.Unlock()
		return cur, nil
	}
	root, err := l.rng.GetRootHash(nil)
	l.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("tlog: root: %w", err)
	}
	if root == nil {
		root = rfc6962.DefaultHasher.EmptyRoot()
	}
	text := log.Checkpoint{Origin: l.origin, Size: size, Hash: root}.Marshal()
	signed, err := note.Sign(&note.Note{Text: string(text)}, l.signer)
	if err != nil {
		return nil, fmt.Errorf("tlog: sign checkpoint: %w", err)
	}
	if err := l.db.Set([]byte(keyCP), signed, pebble.Sync); err != nil {
		return nil, fmt.Errorf("tlog: store checkpoint: %w", err)
	}
	c := &checkpoint{size: size, note: signed}
	l.cp.Store(c)
	return c, nil
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
// nil, nil when the outcome is not in the log (yet).
func (l *Log) Inclusion(intentID string) (*intentd.LogInclusion, error) {
	v, closer, err := l.db.Get(append([]byte{prefixLeaf}, intentID...))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tlog: read leaf index: %w", err)
	}
	index := binary.BigEndian.Uint64(v)
	closer.Close()
	cp := l.cp.Load()
	if index >= cp.size {
		if cp, err = l.publish(); err != nil {
			return nil, err
		}
	}
	entry, err := l.get(indexKey(prefixEntry, index))
	if err != nil {
		return nil, err
	}
	nodes, err := proof.Inclusion(index, cp.size)
	if err != nil {
		return nil, fmt.Errorf("tlog: %w", err)
	}
	hashes, err := l.nodes(nodes.IDs)
	if err != nil {
		return nil, fmt.Errorf("tlog: inclusion proof: %w", err)
	}
	path, err := nodes.Rehash(hashes, rfc6962.DefaultHasher.HashChildren)
	if err != nil {
		return nil, fmt.Errorf("tlog: inclusion proof: %w", err)
	}
	return &intentd.LogInclusion{LeafIndex: index, Entry: entry, InclusionProof: path, Checkpoint: string(cp.note)}, nil
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

// Tile returns the hashes of a tile (tlog-tiles): width hashes of the tree's level
// TileHeight*level, from index*TileWidth. Full and partial tiles alike are served
// only once every hash in them exists, so that what is served never changes.
func (l *Log) Tile(level, index uint64, width int) ([]byte, error) {
	if level*TileHeight > 63 || index > maxTileIndex {
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
		return nil, fmt.Errorf("tlog: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, it.Value()...)
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
		return nil, fmt.Errorf("tlog: %w", err)
	}
	defer it.Close()
	var out []byte
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		v := it.Value()
		out = binary.BigEndian.AppendUint16(out, uint16(len(v)))
		out = append(out, v...)
		n++
	}
	if n != width {
		return nil, errNotFound("entry bundle %d of width %d is not in the log", index, width)
	}
	return out, nil
}

// Source is what a log is built from: the event stream and the receipts of its
// outcomes. actors.Engine is one.
type Source interface {
	// Subscribe follows the events after from, as intentd.Engine.Subscribe.
	Subscribe(ctx context.Context, from uint64, f intentd.Filter) (intentd.Subscription, error)
	// Receipt returns the stored JSON of a decided intent's signed receipt, nil when
	// its outcome has none.
	Receipt(ctx context.Context, id string) (json.RawMessage, error)
}

// Run follows the engine's events into the log, and signs a checkpoint each interval
// while leaves come, until ctx ends. It returns ErrGap when the events it needs are no
// longer retained; then the log serves what it has and grows no more.
func (l *Log) Run(ctx context.Context, e Source) error {
	// The signer stops with Run, so that Close never closes the database under it.
	sctx, stop := context.WithCancel(ctx)
	signed := make(chan struct{})
	go func() { defer close(signed); l.checkpoints(sctx) }()
	defer func() { stop(); <-signed }()
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.follow(ctx, e)
		if errors.Is(err, ErrGap) {
			l.stopped.Store(true)
			l.log.Error("the transparency log stops: restore its folder from a copy, or from another node", "err", err, "last_event", l.lastEvent)
			return err
		}
		if ctx.Err() != nil || l.stopped.Load() {
			return err
		}
		if !errors.Is(err, intentd.ErrSubscriberTooSlow) {
			l.log.Warn("the transparency log lost the event stream; following it again", "err", err)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
	}
	return nil
}

// follow appends the events after the log's last one until the subscription ends.
func (l *Log) follow(ctx context.Context, e Source) error {
	l.mu.Lock()
	from := l.lastEvent
	l.mu.Unlock()
	sub, err := e.Subscribe(ctx, from, intentd.Filter{})
	if err != nil {
		return err
	}
	l.following.Store(true)
	defer func() {
		sub.Close()
		l.following.Store(false)
	}()
	if sub.Truncated() {
		return fmt.Errorf("%w (the log holds up to event %d)", ErrGap, from)
	}
	batch := make([]leaf, 0, TileWidth)
	for {
		batch = batch[:0]
		ev, err := sub.Next(ctx)
		for ; err == nil; ev, err = sub.Next(ctx) {
			lf, lerr := l.leafOf(ctx, e, ev)
			if lerr != nil {
				return lerr
			}
			batch = append(batch, lf)
			if !sub.Pending() || len(batch) == cap(batch) {
				break
			}
		}
		if aerr := l.append(batch); aerr != nil {
			return aerr
		}
		if err != nil {
			return err
		}
		// At most one batch each commitEvery: under load the events of that time
		// wait in the subscription and share one commit, which costs as much for one
		// leaf as for a hundred.
		select {
		case <-time.After(commitEvery):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// commitEvery spaces the log's writes; a leaf waits at most this long beyond its event.
const commitEvery = 10 * time.Millisecond

// leafOf makes the leaf of an event: its digest, and its receipt's, which it reads
// from the source. A receipt that cannot be read now is asked for again, never left
// out: a leaf made without it would differ from the one every other node makes.
func (l *Log) leafOf(ctx context.Context, e Source, ev intentd.Event) (leaf, error) {
	sum := sha256.Sum256(ev.Data)
	lf := leaf{eventID: ev.ID, entry: intentd.LogEntry{EventID: ev.ID, Type: ev.Type, IntentID: ev.IntentID, EventDigest: crypto.EncodeBase58(sum[:])}}
	if ev.Type == intentd.StateExpired {
		return lf, nil
	}
	for tries := 1; ; tries++ {
		raw, err := e.Receipt(ctx, ev.IntentID)
		switch {
		case err == nil && len(raw) == 0:
			return lf, nil
		case err == nil:
			if lf.entry.ReceiptDigest, err = crypto.Digest(raw); err != nil {
				return leaf{}, fmt.Errorf("tlog: receipt of %s: %w", ev.IntentID, err)
			}
			return lf, nil
		case ctx.Err() != nil:
			return leaf{}, ctx.Err()
		}
		if tries%10 == 1 {
			l.log.Warn("the transparency log cannot read a receipt; it waits", "intent_id", ev.IntentID, "event_id", ev.ID, "err", err)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return leaf{}, ctx.Err()
		}
	}
}

// checkpoints signs a checkpoint each interval in which leaves came.
func (l *Log) checkpoints(ctx context.Context) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if l.size.Load() > l.cp.Load().size {
				if _, err := l.publish(); err != nil {
					l.log.Error("the transparency log could not sign a checkpoint", "err", err)
				}
			}
		}
	}
}

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func indexKey(prefix byte, i uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefix}, i)
}

func nodeKey(dst []byte, level uint, index uint64) []byte {
	dst = append(dst, prefixNode, byte(level))
	return binary.BigEndian.AppendUint64(dst, index)
}

// noteSigner signs checkpoints with the receipt key under the origin's name.
type noteSigner struct {
	name string
	hash uint32
	key  *crypto.SigningKey
}

func (s noteSigner) Name() string                    { return s.name }
func (s noteSigner) KeyHash() uint32                 { return s.hash }
func (s noteSigner) Sign(msg []byte) ([]byte, error) { return s.key.Sign(msg), nil }

// newSigner returns the note signer of origin and its verifier key.
func newSigner(origin string, key *crypto.SigningKey) (note.Signer, string, error) {
	v, err := iproof.LogVerifier(origin, key.PublicKey())
	if err != nil {
		return nil, "", fmt.Errorf("tlog: %w", err)
	}
	vkey, err := note.NewEd25519VerifierKey(origin, key.PublicKey())
	if err != nil {
		return nil, "", fmt.Errorf("tlog: %w", err)
	}
	return noteSigner{name: v.Name(), hash: v.KeyHash(), key: key}, vkey, nil
}

// pebbleLogger sends Pebble's lines to the service's log, its informational ones at
// debug level, where they are out of the way.
type pebbleLogger struct{ log *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.log.Debug("tlog pebble: " + fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.log.Error("tlog pebble: " + fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.log.Error("tlog pebble: " + fmt.Sprintf(format, args...))
	panic(fmt.Sprintf(format, args...))
}
