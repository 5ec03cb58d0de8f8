package persistence

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/pebbledir"
	"github.com/intentd/intentd/internal/pebbleevents"
)

// The key space. One byte of prefix a table keeps the tables apart and lets a table be
// scanned with plain bounds.
const (
	prefixPolicy     = 'p' // p<policy id> -> policy record
	prefixBytecode   = 'b' // b<policy id> -> bytecode, kept after a delete for proofs
	prefixIntent     = 'i' // i<intent id> -> snapshot
	prefixRef        = 'r' // r<policy id>\x00<intent id> -> "": no longer written (refs.go)
	prefixExpiry     = 'x' // x<8-byte unix nanos><intent id> -> policy id: an open intent's deadline
	prefixProcessing = 'q' // q<intent id> -> policy id: the intent is processing
	prefixEvent      = 'e' // e<8-byte event id> -> 8-byte unix nanos, then the payload
	prefixWrite      = 'w' // w<8-byte write number> -> "": the newest committed batch (mark.go)
	keyEventSeq      = "mseq"
)

// FS is the file system a store lives on. The zero value is the operating system's; NewMemFS
// gives an in-memory one that survives a Close, so a test can re-open what it wrote.
type FS struct{ fs vfs.FS }

// NewMemFS returns an empty in-memory file system.
func NewMemFS() FS { return FS{fs: vfs.NewMem()} }

// Options configure Open.
type Options struct {
	// FS is where the data folder is; the zero value is the real file system.
	FS FS
	// Logger receives Pebble's informational messages at debug level, and the error
	// of a failed scan of the stored intent ids (creates then read the store). Nil
	// discards them.
	Logger *slog.Logger
	// CacheBytes is the block cache size; 0 means 128 MiB.
	CacheBytes int64
	// NoSync skips fsync on writes, and keeps no mark. Only for benchmarks that measure
	// everything else: a store written so is refused, as one that lost its mark, when
	// opened without it (unless AcceptDataLoss).
	NoSync bool
	// MinFreeBytes is the free space of the folder's file system below which writes are
	// refused with intentd.ErrStorageFull (diskspace.go); 0: never refused.
	// DefaultMinFreeBytes is what intentd runs with.
	MinFreeBytes int64
	// FreeBytes reads the free space of the folder's file system; nil: the operating
	// system's answer for a folder on the real file system, and no check on an
	// in-memory one.
	FreeBytes func() (uint64, error)
	// AcceptDataLoss opens a store whose write-ahead log lost acknowledged writes (see
	// mark.go) instead of refusing it, and logs what was lost.
	AcceptDataLoss bool

	// diskSlowAfter is how long an operation on the store's files runs before it is
	// logged as slow; 0: defaultDiskSlowAfter. Tests shorten it.
	diskSlowAfter time.Duration
}

// defaultDiskSlowAfter is how long a write, sync or other operation on the store's
// files may run before it is logged as slow (pebbleevents). An fsync takes well under
// 10 ms on a working disk; one still running after 5 s is a disk that has stopped
// answering (a failing device, a network volume that has gone), and without the line
// the only sign would be requests that never return.
const defaultDiskSlowAfter = 5 * time.Second

// Store is the Pebble-backed store. Its methods are safe for concurrent use.
type Store struct {
	// unwatchDisk stops the watch for slow operations on the store's files.
	unwatchDisk io.Closer
	db          *pebble.DB
	writeOpts   *pebble.WriteOptions

	// policyMu orders policy deletes against intent creation: creators share it, a delete
	// takes it alone, so a delete never misses the reference of an intent being created.
	policyMu sync.RWMutex
	// policies holds the ids of the stored policies, under policyMu, each with the
	// number of open and processing intents that name it (refs.go): every intent
	// creation checks its policy, and policies are few.
	policies map[string]*atomic.Int64
	// finishMu is held by the committer from a group's commit until its policy
	// references are released.
	finishMu sync.Mutex
	// refsLoaded is closed once the references of the intents stored before Open are
	// counted; refsErr, set before, says why they could not be.
	refsLoaded chan struct{}
	refsErr    error
	// creating holds the ids whose CreateIntent is between its check and its durable
	// write; a second create of one of them waits for the first instead of racing it.
	// A lock held across the write would make creates of unrelated ids queue behind
	// one another's fsyncs.
	creatingMu sync.Mutex
	creating   map[string]chan struct{}
	// writers counts the synced commits in progress; see syncCrowd.
	writers *atomic.Int64
	// ids answers, for most creates, that the id is new without reading the store.
	ids       *idFilter
	idsLoaded chan struct{}
	log       *slog.Logger

	// The event committer: one goroutine assigns event ids and writes terminal states in
	// groups, so ids are gapless in commit order and one fsync serves a whole group.
	finishCh  chan *finishReq
	sinkMu    sync.RWMutex
	sink      func(intentd.Event)
	closeOnce sync.Once
	closing   chan struct{}
	done      chan struct{}
	seq       uint64 // last assigned event id; owned by the committer goroutine

	// The mark (mark.go): the write numbers given and known durable, the event
	// sequence known durable, and the mark last written, under markMu, which the
	// committer takes too when it raises the ceiling of event ids (eventids.go);
	// issued is that ceiling, read by the committer without the lock.
	fs         vfs.FS
	dir        string
	noMark     bool
	writeNum   atomic.Uint64
	durable    atomic.Uint64
	durableSeq atomic.Uint64
	markMu     sync.Mutex
	marked     markRecord
	issued     atomic.Uint64
	markDone   chan struct{}

	// Free space (diskspace.go): writes are refused while full is set.
	minFree   uint64
	full      atomic.Bool
	freeBytes atomic.Uint64
	diskDone  chan struct{}

	// logMu makes the check and the write of a log bundle one step (logbundle.go).
	logMu sync.Mutex
}

// Open opens or creates the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	cacheBytes := opts.CacheBytes
	if cacheBytes == 0 {
		cacheBytes = defaultCacheBytes
	}
	cache := pebble.NewCache(cacheBytes)
	events := pebbleevents.Listener(opts.Logger, "store")
	po := &pebble.Options{
		Cache:         cache,
		Logger:        pebbleLogger{opts.Logger},
		EventListener: events,
		Levels:        make([]pebble.LevelOptions, 7),
		MemTableSize:  memTableSize,
	}
	// Bloom filters on every level: most point reads are of keys that do not exist (a
	// new intent's id, checked before it is written), and without a filter each such
	// read searches every level.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		po.Levels[i].FilterType = pebble.TableFilter
	}
	if opts.FS.fs != nil {
		po.FS = opts.FS.fs
	}
	if po.FS == nil {
		po.FS = vfs.Default
	}
	existed, err := checkCurrent(po.FS, dir, opts.Logger)
	if err != nil {
		cache.Unref()
		return nil, err
	}
	slowAfter := opts.diskSlowAfter
	if slowAfter == 0 {
		slowAfter = defaultDiskSlowAfter
	}
	// The watch stops with the store (Close), after the database is closed.
	var unwatch io.Closer
	po.FS, unwatch = vfs.WithDiskHealthChecks(logCushionFS{po.FS}, slowAfter, events.DiskSlow)
	// The logs Pebble is about to replay, named if the mark finds writes missing:
	// replay folds them into tables and removes them.
	replayed := walFiles(po.FS, dir)
	writers := new(atomic.Int64)
	po.WALMinSyncInterval = syncInterval(writers)
	// A panic inside Pebble's open, which some damaged folders cause, and a fatal error
	// it meets while it opens (a full disk) are errors of the open.
	db, err := pebbledir.Open(dir, po)
	cache.Unref()
	if err != nil {
		unwatch.Close()
		return nil, openFailed(dir, err)
	}
	s := &Store{
		db:          db,
		unwatchDisk: unwatch,
		writeOpts:   pebble.Sync,
		finishCh:    make(chan *finishReq, 1024),
		creating:    make(map[string]chan struct{}),
		closing:     make(chan struct{}),
		done:        make(chan struct{}),
		writers:     writers,
		ids:         newIDFilter(idFilterFirst),
		idsLoaded:   make(chan struct{}),
		refsLoaded:  make(chan struct{}),
		log:         opts.Logger,
		fs:          po.FS,
		dir:         dir,
		noMark:      opts.NoSync,
		markDone:    make(chan struct{}),
		diskDone:    make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.NoSync {
		s.writeOpts = pebble.NoSync
	}
	seq, err := s.startSeq()
	if err == nil {
		err = s.loadPolicyIDs()
	}
	if err != nil {
		s.closeDB()
		return nil, err
	}
	s.seq = seq
	s.durableSeq.Store(seq)
	if !s.noMark {
		if err := s.checkMark(opts.AcceptDataLoss, existed, replayed); err != nil {
			s.closeDB()
			return nil, err
		}
	}
	// The free space is read before the first write, which may be the move of the
	// references below: on a disk too full for it, Open fails saying so, rather than
	// meeting the disk's end inside Pebble.
	free := opts.FreeBytes
	if free == nil && opts.FS.fs == nil && statfsFree != nil {
		free = func() (uint64, error) { return statfsFree(dir) }
	}
	if opts.MinFreeBytes > 0 {
		s.minFree = uint64(opts.MinFreeBytes)
	}
	watchDisk := free != nil && s.minFree > 0
	if watchDisk {
		s.checkDisk(free)
	}
	refs, err := s.openRefs()
	if err != nil {
		s.closeDB()
		return nil, err
	}
	if !s.noMark {
		go s.markLoop()
	} else {
		close(s.markDone)
	}
	if watchDisk {
		go s.diskLoop(free)
	} else {
		close(s.diskDone)
	}
	go s.commitLoop()
	go s.loadIntentIDs()
	go s.loadRefs(refs)
	return s, nil
}

// memTableSize is the size of Pebble's memtable, eight times its default of 4 MiB. An
// intent's snapshot is written again by its proposal and by its outcome; in a larger
// memtable those writes replace each other before they are flushed, and the tables
// flushed are fewer and larger. With the write pattern of decisions (20,000 intents
// created, then a proposal and an outcome each at 1,000 a second) compactions rewrote
// 450 MB for 45 MB flushed at 4 MiB, and 70 MB at 32 MiB: compaction had been a sixth
// of the server's CPU under that load. Up to two memtables are held (Pebble's
// MemTableStopWritesThreshold), and a restart replays at most that much log.
const memTableSize = 32 << 20

// defaultCacheBytes is the block cache's size unless Options say otherwise. A proposal
// reads its intent's snapshot back when the intent's actor was passivated, and at
// 32 MiB the reads of snapshots pushed the tables' index and filter blocks out of the
// cache: under decisions at 1,000 a second most of the store's block reads were of
// index and filter blocks read again from the file. The cache holds only blocks
// read, so a store that is read little stays small.
const defaultCacheBytes = 128 << 20

// checkCurrent refuses a folder that holds a store but not its CURRENT file, which names
// the manifest to read: Pebble would take the folder for a new store and stop on a nil
// pointer replaying its log.
//
// A folder whose store was never completely created is let through, with a warning.
// On a first open Pebble writes LOCK, then MANIFEST-000001, then CURRENT (through a
// temporary file), and only then a write-ahead log and an OPTIONS file; and the store
// acknowledges nothing before its first open completes and its mark is written. So a
// folder without CURRENT whose store files are only LOCK, MANIFEST-000001 and temporary
// files never held a write: a first start that stopped half-way (a full disk, a crash)
// left them. Pebble creates the store over them, as it would in an empty folder.
//
// existed reports whether the folder held a store, CURRENT and all.
func checkCurrent(fs vfs.FS, dir string, log *slog.Logger) (existed bool, err error) {
	names, err := fs.List(dir)
	if err != nil {
		return false, nil // no folder yet: Pebble makes it
	}
	var held []string
	created := false // a file that exists only once a first open completed
	for _, n := range names {
		switch {
		case n == "CURRENT":
			return true, nil
		case strings.HasPrefix(n, "MANIFEST-") || strings.HasSuffix(n, ".log") || strings.HasSuffix(n, ".sst"):
			held = append(held, n)
			created = created || n != "MANIFEST-000001"
		case strings.HasPrefix(n, "OPTIONS-") || n == markFile:
			created = true
		}
	}
	if len(held) == 0 {
		return false, nil
	}
	slices.Sort(held)
	if !created {
		if log != nil {
			log.Warn("the store in this folder was never completely created (no CURRENT, and only the first manifest, which holds no write): it is created afresh",
				"dir", dir, "files", strings.Join(held, ", "))
		}
		return false, nil
	}
	return false, fmt.Errorf("open store in %s: the file CURRENT is missing, but the folder holds a store (%s): "+
		"restore the folder from a backup (docs/operating.md, \"The data folder\")", dir, strings.Join(held, ", "))
}

// openFailed is the error of an Open that failed. A full disk is said in so many words,
// since its remedy is the operator's, and it is no damage: nothing is written before
// the first open completes, so the next start, with space, creates or opens the store.
func openFailed(dir string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("open store in %s: %w: its file system has no space left (%v); free some and start again", dir, intentd.ErrStorageFull, err)
	}
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
		// Pebble's LOCK file is held: flock says only "resource temporarily unavailable".
		return fmt.Errorf("open store in %s: another process holds its LOCK file, most likely another intentd on the same --data; stop it, or give this one another folder (%w)", dir, err)
	}
	return fmt.Errorf("open store in %s: %w", dir, err)
}

// Under a crowd of concurrent synced writes, the WAL waits syncWait after one fsync before
// the next, so that one fsync serves more writes. An fsync costs the kernel CPU time as
// well as the disk; at 64 concurrent creates on two cores, waiting 300 µs after each
// turned about 8,000 intents/s into 10,000. Serial writes do not pay it: with fewer than
// syncCrowd writes in progress when an fsync ends, the next starts at once, so a lone
// proposal's two writes do not each wait (ProposalToEvent's median stayed at about
// 230 µs, where a pause after every fsync made it 1.3 ms). A write that arrives alone
// just after a crowd's fsync may wait out the rest of that pause. The wait trades an
// fsync's CPU for latency (docs/benchmarks.md, the thirteenth pass). A flat 1 ms saved
// decide 80 µs of CPU a proposal at 1,000 a second, but took its median from a
// proposal's 200 to its event from 1.4 to 4.1 ms, and intake at 4 in flight from 3,400 to
// 2,000 a second; 40 µs for each write in progress did better at 4 in flight and cost
// decide 740 µs a proposal against 560 to 600.
//
// A throng, syncThrong writes or more in progress, waits syncThrongWait instead. So many
// writes waiting on the log mean that the service is busy, and there an fsync's CPU is
// taken from the requests it would serve: at 64 creates in flight the longer wait made
// 620 fsyncs a second instead of 950, 2 to 3 µs less CPU an intent and about 4 % more
// intents a second (docs/benchmarks.md, the fourteenth pass). A proposal's writes and a
// few creates at a time meet crowds of two to four, and keep the short wait and their
// latency. At 16 in flight, where a throng comes and goes, it cost 4 to 6 % of the
// intents a second and saved 5 to 8 % of the CPU an intent; a throng of 32 left that
// load alone but saved 64 in flight no more than the runs' spread.
const (
	syncCrowd      = 2
	syncWait       = 300 * time.Microsecond
	syncThrong     = 16
	syncThrongWait = time.Millisecond
)

// syncInterval is the WAL's pause after an fsync, asked for as each one ends. The writes
// it served may or may not have left commit by then, so the count is a rough measure of
// the crowd; it only decides how writes are grouped, never whether one is synced.
func syncInterval(writers *atomic.Int64) func() time.Duration {
	return func() time.Duration {
		switch n := writers.Load(); {
		case n >= syncThrong:
			return syncThrongWait
		case n >= syncCrowd:
			return syncWait
		}
		return 0
	}
}

// commit writes a batch with the store's durability and counts it among the writers.
func (s *Store) commit(b *pebble.Batch) error {
	if s.full.Load() {
		return s.Writable()
	}
	s.writers.Add(1)
	defer s.writers.Add(-1)
	n := s.writeNum.Add(1)
	b.Set(writeKey(n), nil, nil)
	if err := b.Commit(s.writeOpts); err != nil {
		return err
	}
	s.noteDurable(n)
	return nil
}

// Close stops the committer after the writes already queued and closes the database.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closing)
		<-s.done
		<-s.markDone
		<-s.diskDone
		<-s.idsLoaded
		<-s.refsLoaded
		err = s.closeDB()
	})
	return err
}

// closeDB closes the database, then the watch of its files' operations.
func (s *Store) closeDB() error {
	err := s.db.Close()
	s.unwatchDisk.Close()
	return err
}

// startSeq is the event id the committer starts after: the last event's, or the end of
// a gap past it (eventids.go).
func (s *Store) startSeq() (uint64, error) {
	seq, err := s.readSeq()
	if err != nil {
		return 0, err
	}
	gap, err := s.lastGapEnd()
	return max(seq, gap), err
}

// readSeq is the id of the last event written, 0 for none.
func (s *Store) readSeq() (uint64, error) {
	v, err := s.get([]byte(keyEventSeq))
	if errors.Is(err, intentd.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("event sequence record is %d bytes, want 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func (s *Store) loadPolicyIDs() error {
	s.policies = make(map[string]*atomic.Int64)
	return s.scan([]byte{prefixPolicy}, func(k, _ []byte) error {
		s.policies[string(k[1:])] = new(atomic.Int64)
		return nil
	})
}

// get returns a copy of the value under key, or intentd.ErrNotFound.
func (s *Store) get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, intentd.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := bytes.Clone(v)
	return out, closer.Close()
}

func (s *Store) has(key []byte) (bool, error) {
	_, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}

func key(prefix byte, parts ...string) []byte {
	n := 1
	for _, p := range parts {
		n += len(p) + 1
	}
	k := make([]byte, 0, n)
	k = append(k, prefix)
	for i, p := range parts {
		if i > 0 {
			k = append(k, 0)
		}
		k = append(k, p...)
	}
	return k
}

// expiryIDAt is where the intent id starts in an expiry index key: after the prefix and
// the 8-byte deadline.
const expiryIDAt = 1 + 8

func expiryKey(at time.Time, id string) []byte {
	k := make([]byte, 0, expiryIDAt+len(id))
	k = append(k, prefixExpiry)
	k = binary.BigEndian.AppendUint64(k, uint64(at.UnixNano()))
	return append(k, id...)
}

func eventKey(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixEvent}, id)
}

// PutPolicy stores a compiled policy under its id. Storing an id that exists changes
// nothing and reports created false: the id is the hash of the bytecode, so the bytecode
// is the same.
func (s *Store) PutPolicy(_ context.Context, id string, bytecode, source []byte) (created bool, err error) {
	s.policyMu.Lock()
	defer s.policyMu.Unlock()
	if s.policies[id] != nil {
		return false, nil
	}
	k := key(prefixPolicy, id)
	rec := binary.AppendUvarint(nil, uint64(len(bytecode)))
	rec = append(rec, bytecode...)
	rec = append(rec, source...)
	b := s.db.NewBatch()
	defer b.Close()
	b.Set(k, rec, nil)
	b.Set(key(prefixBytecode, id), bytecode, nil)
	if err := s.commit(b); err != nil {
		return false, err
	}
	s.policies[id] = new(atomic.Int64)
	return true, nil
}

// PolicyBytecode returns the bytecode of a policy that is or once was stored. A deleted
// policy's bytecode is kept, so that the proofs of the intents that named it can still
// be checked; it is a few kilobytes per distinct policy ever stored.
func (s *Store) PolicyBytecode(_ context.Context, id string) ([]byte, error) {
	return s.get(key(prefixBytecode, id))
}

// Policy returns a stored policy's bytecode and source.
func (s *Store) Policy(_ context.Context, id string) (bytecode, source []byte, err error) {
	rec, err := s.get(key(prefixPolicy, id))
	if err != nil {
		return nil, nil, err
	}
	n, w := binary.Uvarint(rec)
	if w <= 0 || n > uint64(len(rec)-w) {
		return nil, nil, fmt.Errorf("policy record %s is corrupt", id)
	}
	return rec[w : w+int(n)], rec[w+int(n):], nil
}

// DeletePolicy removes a policy unless an open or processing intent names it. Right
// after Open it waits for the references of the stored intents to be counted.
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	select {
	case <-s.refsLoaded:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.refsErr != nil {
		return fmt.Errorf("delete policy %s: its references are not known: %w", id, s.refsErr)
	}
	// A group committed but not yet released would count its references still; a
	// delete holds finishes back for its own commit, one rare write.
	s.finishMu.Lock()
	defer s.finishMu.Unlock()
	s.policyMu.Lock()
	defer s.policyMu.Unlock()
	refs := s.policies[id]
	if refs == nil {
		return intentd.ErrNotFound
	}
	if refs.Load() > 0 {
		return intentd.ErrPolicyInUse
	}
	b := s.db.NewBatch()
	defer b.Close()
	b.Delete(key(prefixPolicy, id), nil)
	if err := s.commit(b); err != nil {
		return err
	}
	delete(s.policies, id)
	return nil
}

// prefixEnd is the smallest key greater than every key with the prefix.
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// claim marks id as being created, after any create of it in progress has ended; the
// returned function ends the claim.
func (s *Store) claim(id string) func() {
	for {
		s.creatingMu.Lock()
		wait, busy := s.creating[id]
		if !busy {
			done := make(chan struct{})
			s.creating[id] = done
			s.creatingMu.Unlock()
			return func() {
				s.creatingMu.Lock()
				delete(s.creating, id)
				s.creatingMu.Unlock()
				close(done)
			}
		}
		s.creatingMu.Unlock()
		<-wait
	}
}

// CreateIntent stores a new open intent: its snapshot, its deadline in the expiry index
// and its reference to the policy, in one synced batch. It fails with intentd.ErrPolicyNotFound
// when the policy is not stored and intentd.ErrExists when the id is taken.
func (s *Store) CreateIntent(_ context.Context, id, policyID string, snapshot []byte, expiresAt time.Time) error {
	s.policyMu.RLock()
	defer s.policyMu.RUnlock()
	defer s.claim(id)()

	refs := s.policies[policyID]
	if refs == nil {
		return intentd.ErrPolicyNotFound
	}
	ik := key(prefixIntent, id)
	if s.ids.mayBeStored(id) {
		if ok, err := s.has(ik); err != nil {
			return err
		} else if ok {
			return intentd.ErrExists
		}
	}
	s.ids.add(id)
	b := s.db.NewBatch()
	defer b.Close()
	b.Set(ik, snapshot, nil)
	b.Set(expiryKey(expiresAt, id), []byte(policyID), nil)
	if err := s.commit(b); err != nil {
		return err
	}
	refs.Add(1)
	return nil
}

// Intent returns an intent's snapshot.
func (s *Store) Intent(_ context.Context, id string) ([]byte, error) {
	return s.get(key(prefixIntent, id))
}

// BeginProcessing records that an open intent accepted a proposal: its new snapshot, its
// deadline out of the expiry index (a processing intent cannot expire) and its id in the
// processing set, which start-up reads to resume interrupted work, with the policy it
// names.
func (s *Store) BeginProcessing(_ context.Context, id, policyID string, snapshot []byte, expiresAt time.Time) error {
	b := s.db.NewBatch()
	defer b.Close()
	b.Set(key(prefixIntent, id), snapshot, nil)
	b.Delete(expiryKey(expiresAt, id), nil)
	b.Set(key(prefixProcessing, id), []byte(policyID), nil)
	return s.commit(b)
}

// Processing lists the intents that were processing when the store was last written.
func (s *Store) Processing(context.Context) ([]string, error) {
	var ids []string
	err := s.scan([]byte{prefixProcessing}, func(k, _ []byte) error {
		ids = append(ids, string(k[1:]))
		return nil
	})
	return ids, err
}

// DueExpiries lists up to limit open intents whose deadline is at or before now, earliest
// first.
func (s *Store) DueExpiries(_ context.Context, now time.Time, limit int) ([]string, error) {
	var ids []string
	upper := binary.BigEndian.AppendUint64([]byte{prefixExpiry}, uint64(now.UnixNano())+1)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixExpiry}, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	for ok := it.First(); ok && len(ids) < limit; ok = it.Next() {
		k := it.Key()
		if len(k) < expiryIDAt {
			continue
		}
		ids = append(ids, string(k[expiryIDAt:]))
	}
	return ids, it.Close()
}

// NextExpiry reports the earliest deadline in the expiry index.
func (s *Store) NextExpiry(context.Context) (time.Time, bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixExpiry}, UpperBound: []byte{prefixExpiry + 1}})
	if err != nil {
		return time.Time{}, false, err
	}
	var at time.Time
	found := false
	if it.First() && len(it.Key()) >= expiryIDAt {
		at = time.Unix(0, int64(binary.BigEndian.Uint64(it.Key()[1:expiryIDAt])))
		found = true
	}
	return at, found, it.Close()
}

func (s *Store) scan(prefix []byte, fn func(k, v []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// SetEventSink names the function that hears of every event once it is durable, in id
// order, from the committer's goroutine. It must not block; it is set before the first
// Finish.
func (s *Store) SetEventSink(fn func(intentd.Event)) {
	s.sinkMu.Lock()
	s.sink = fn
	s.sinkMu.Unlock()
}

// Finish writes an intent's terminal state in one synced batch: its snapshot, its
// deadline out of the expiry index, its id out of the processing set, its policy
// reference released, and its event appended with the next event id, which it returns.
// The event sink hears of the event after the batch is durable.
func (s *Store) Finish(_ context.Context, id, policyID string, snapshot []byte, expiresAt time.Time, ev intentd.Event) (uint64, error) {
	select {
	case <-s.closing:
		return 0, intentd.ErrStoreClosed
	default:
	}
	// An expiry replaces an open intent only: one whose proposal was accepted is the
	// proposal's to end, whatever a stale reader decided. An outcome replaces a
	// processing intent only: BeginProcessing moves an intent from open to processing
	// once, and nothing writes its processing record again, so an outcome over
	// processing is an outcome of the one proposal that record holds.
	processing, err := s.has(key(prefixProcessing, id))
	if err != nil {
		return 0, fmt.Errorf("finish %s: %w", id, err)
	}
	switch expiry := ev.Type == intentd.StateExpired; {
	case expiry && processing:
		return 0, fmt.Errorf("expire %s, which is processing: %w", id, intentd.ErrStale)
	case !expiry && !processing:
		return 0, fmt.Errorf("finish %s (%s), which is not processing: %w", id, ev.Type, intentd.ErrStale)
	}
	req := &finishReq{
		id: id, policyID: policyID, snapshot: snapshot, expiresAt: expiresAt, event: ev,
		at:    time.Now(),
		reply: make(chan finishResult, 1),
	}
	select {
	case s.finishCh <- req:
	case <-s.closing:
		return 0, intentd.ErrStoreClosed
	}
	select {
	case r := <-req.reply:
		return r.eventID, r.err
	case <-s.done:
		// The committer drains the queue before it ends, so a request it took has its
		// reply waiting; one queued after the drain was never written.
		select {
		case r := <-req.reply:
			return r.eventID, r.err
		default:
			return 0, intentd.ErrStoreClosed
		}
	}
}

type finishReq struct {
	id, policyID string
	snapshot     []byte
	expiresAt    time.Time
	event        intentd.Event
	at           time.Time
	reply        chan finishResult
}

type finishResult struct {
	eventID uint64
	err     error
}

// maxGroup bounds one committed group so a burst cannot build an unbounded batch.
const maxGroup = 512

func (s *Store) commitLoop() {
	defer close(s.done)
	group := make([]*finishReq, 0, maxGroup)
	for {
		group = group[:0]
		select {
		case r := <-s.finishCh:
			group = append(group, r)
		case <-s.closing:
			s.drainOnClose()
			return
		}
	more:
		for len(group) < maxGroup {
			select {
			case r := <-s.finishCh:
				group = append(group, r)
			default:
				break more
			}
		}
		s.commitGroup(group)
	}
}

// drainOnClose answers what is still queued: a request queued before Close is written.
func (s *Store) drainOnClose() {
	for {
		select {
		case r := <-s.finishCh:
			s.commitGroup([]*finishReq{r})
		default:
			return
		}
	}
}

func (s *Store) commitGroup(group []*finishReq) {
	b := s.db.NewBatch()
	defer b.Close()
	seq := s.seq
	events := make([]intentd.Event, 0, len(group))
	for _, r := range group {
		seq++
		b.Set(key(prefixIntent, r.id), r.snapshot, nil)
		b.Delete(expiryKey(r.expiresAt, r.id), nil)
		b.Delete(key(prefixProcessing, r.id), nil)
		rec := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(r.event.Data)), uint64(r.at.UnixNano()))
		b.Set(eventKey(seq), append(rec, r.event.Data...), nil)
		ev := r.event
		ev.ID, ev.At = seq, r.at
		events = append(events, ev)
	}
	b.Set([]byte(keyEventSeq), binary.BigEndian.AppendUint64(nil, seq), nil)
	var err error
	if !s.noMark && seq > s.issued.Load() {
		err = s.reserveIDs(seq)
	}
	// A reader sees the group's terminal snapshots once the commit is done, a moment
	// before their references are released: DeletePolicy waits for finishMu, so that a
	// delete after an outcome it read never counts that outcome's reference.
	s.finishMu.Lock()
	if err == nil {
		err = s.commit(b)
	}
	if err != nil {
		s.finishMu.Unlock()
		// Nothing of the group is written and the sequence does not advance, so ids
		// stay gapless; each caller learns its write failed.
		for _, r := range group {
			r.reply <- finishResult{err: fmt.Errorf("write terminal state of %s: %w", r.id, err)}
		}
		return
	}
	s.seq = seq
	s.durableSeq.Store(seq)
	s.releaseRefs(group)
	s.finishMu.Unlock()
	s.sinkMu.RLock()
	sink := s.sink
	s.sinkMu.RUnlock()
	for i, r := range group {
		if sink != nil {
			sink(events[i])
		}
		r.reply <- finishResult{eventID: events[i].ID}
	}
}

// Events calls fn for up to limit events with ids greater than after, in id order.
func (s *Store) Events(_ context.Context, after uint64, limit int, fn func(intentd.Event) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: eventKey(after + 1), UpperBound: []byte{prefixEvent + 1}})
	if err != nil {
		return err
	}
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		ev, err := decodeEvent(it.Key(), it.Value())
		if err != nil {
			it.Close()
			return err
		}
		if err := fn(ev); err != nil {
			it.Close()
			return err
		}
		n++
	}
	return it.Close()
}

// decodeEvent reads an event record: its time, then its JSON, whose type and intent id
// it reads back for the subscribers' filters.
func decodeEvent(k, v []byte) (intentd.Event, error) {
	if len(k) != 9 || len(v) < 8 {
		return intentd.Event{}, fmt.Errorf("event record %x is corrupt", k)
	}
	return intentd.DecodeEvent(binary.BigEndian.Uint64(k[1:]), time.Unix(0, int64(binary.BigEndian.Uint64(v[:8]))), bytes.Clone(v[8:]))
}

// EventBounds reports the oldest retained event id, 0 when none is, and the id of the
// last event written, retained or pruned. The ids of a gap after it (eventids.go) were
// handed out for events a loss took, or held in reserve, and are not counted: the engine
// takes last for an event the log gave or pruned, and a reader resuming inside the gap
// would otherwise be told that the log reads less than it holds. The sequence record on
// disk keeps the gap's end, for a version that knows no gaps.
func (s *Store) EventBounds(context.Context) (first, last uint64, err error) {
	if last, err = s.readSeq(); err == nil {
		last, err = s.outsideGaps(last)
	}
	if err != nil {
		return 0, 0, err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixEvent}, UpperBound: []byte{prefixEvent + 1}})
	if err != nil {
		return 0, 0, err
	}
	if it.First() && len(it.Key()) == 9 {
		first = binary.BigEndian.Uint64(it.Key()[1:])
	}
	return first, last, it.Close()
}

// PrunedThrough reports the id of the newest event pruned, 0 when none was. Ids have no
// gaps here but those of a loss (eventids.go), so it is the one before the oldest
// retained, or the last when none is (EventBounds has already stepped it out of the
// gaps), or the id before a gap that holds that one: a reader who saw the lost events
// has missed none that was pruned.
func (s *Store) PrunedThrough(ctx context.Context) (uint64, error) {
	first, last, err := s.EventBounds(ctx)
	if err != nil || first == 0 {
		return last, err
	}
	return s.outsideGaps(first - 1)
}

// PruneEvents deletes the oldest events beyond keep and those written before olderThan,
// and reports how many it deleted. The sequence record is kept, so ids never restart.
func (s *Store) PruneEvents(ctx context.Context, keep uint64, olderThan time.Time) (int, error) {
	first, last, err := s.EventBounds(ctx)
	if err != nil || first == 0 {
		return 0, err
	}
	cut := first // events with id < cut are deleted
	if from, err := s.keepFrom(last, keep); err != nil {
		return 0, err
	} else if from > cut {
		cut = from
	}
	// Events are written in time order, so the old ones are a prefix of the log.
	err = s.Events(ctx, cut-1, int(last-cut+1), func(e intentd.Event) error {
		if !e.At.Before(olderThan) {
			return errStop
		}
		cut = e.ID + 1
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, err
	}
	if cut <= first {
		return 0, nil
	}
	// Counted, not taken as cut-first: a gap among them holds ids of no event.
	n, err := s.countKeys(eventKey(first), eventKey(cut))
	if err != nil {
		return 0, err
	}
	if err := s.db.DeleteRange(eventKey(first), eventKey(cut), s.writeOpts); err != nil {
		return 0, err
	}
	return n, nil
}

var errStop = errors.New("stop")

// countKeys counts the keys from lo up to hi.
func (s *Store) countKeys(lo, hi []byte) (int, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Close()
}

// pebbleLogger sends Pebble's messages to slog; a fatal one is logged and ends the
// process, as Pebble expects of its logger.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l != nil {
		p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if p.l != nil {
		p.l.Error(msg, "component", "pebble")
	} else {
		fmt.Fprintln(os.Stderr, "pebble:", msg)
	}
	os.Exit(1)
}

var _ intentd.Store = (*Store)(nil)
