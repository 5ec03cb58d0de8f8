package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/pebbledir"
	"github.com/intentd/intentd/internal/pebbleevents"
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
	// refused with intentd.ErrStorageFull (diskspace.go); 0: refused only once a write
	// met a full disk (reserve.go).
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
	// nonces are the spent nonces of agents' signatures (nonce.go).
	nonces nonceBook
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
	// creating claims the ids whose CreateIntent is between its check and its durable
	// write; a second create of one of them waits for the first instead of racing it.
	creating idClaims
	// mandates claims the ids of the mandates being written, so that the compare of a
	// write's revision and the write are one step (mandate.go).
	mandates idClaims
	// webhooks claims the ids of the webhook endpoints being written (webhook.go).
	webhooks idClaims
	// mandateRevs are the mandates' revisions, once read or written, and their records
	// waiting for a batch (mandate.go).
	mandateRevs mandateRevs
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
	inMemory   bool // fs is an in-memory file system: no checkpoint (checkpoint.go)
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
	reserve   *reserve

	// logMu makes the check and the write of a log bundle one step (log.go).
	logMu sync.Mutex

	// Test hooks, run by the caller of a policy delete or an intent create, which are
	// one write here where a store on the network takes two steps: beforeFirstStep
	// before anything else, afterFirstStep once the write is done. Nil runs nothing.
	beforeFirstStep, afterFirstStep func()
}

// Open opens or creates the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	po, events := pebbleOptions(opts)
	existed, err := checkCurrent(po.FS, dir, opts.Logger)
	if err != nil {
		po.Cache.Unref()
		return nil, err
	}
	free := freeBytes(dir, opts)
	res, err := holdReserve(po.FS, dir, free, opts.Logger)
	if err != nil {
		po.Cache.Unref()
		return nil, err
	}
	slowAfter := opts.diskSlowAfter
	if slowAfter == 0 {
		slowAfter = defaultDiskSlowAfter
	}
	// The watch stops with the store (Close), after the database is closed.
	var unwatch io.Closer
	po.FS, unwatch = vfs.WithDiskHealthChecks(vfs.OnDiskFull(logCushionFS{po.FS}, res.release), slowAfter, events.DiskSlow)
	// The logs Pebble is about to replay, named if the mark finds writes missing:
	// replay folds them into tables and removes them.
	replayed := walFiles(po.FS, dir)
	writers := new(atomic.Int64)
	po.WALMinSyncInterval = syncInterval(writers)
	// A panic inside Pebble's open, which some damaged folders cause, and a fatal error
	// it meets while it opens (a full disk) are errors of the open.
	db, err := pebbledir.Open(dir, po)
	po.Cache.Unref()
	if err != nil {
		unwatch.Close()
		return nil, openFailed(dir, err)
	}
	s := newStore(db, unwatch, writers, po.FS, dir, opts)
	s.reserve = res
	if s.inMemory = opts.FS.fs != nil; !s.inMemory {
		removeCheckpoints(dir, opts.Logger)
	}
	refs, err := s.load(opts, existed, replayed, free)
	if err != nil {
		s.closeDB()
		return nil, err
	}
	s.run(free, refs)
	return s, nil
}

// pebbleOptions are the options of the store's database, on the file system opts name,
// with the listener of its events; the caller releases the cache they hold once the
// database is open.
func pebbleOptions(opts Options) (*pebble.Options, *pebble.EventListener) {
	cacheBytes := opts.CacheBytes
	if cacheBytes == 0 {
		cacheBytes = defaultCacheBytes
	}
	events := pebbleevents.Listener(opts.Logger, "store")
	po := &pebble.Options{
		Cache:         pebble.NewCache(cacheBytes),
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
	return po, events
}

// freeBytes is the reader of the free space of dir's file system: opts's, or the
// operating system's for a folder on the real file system, or nil where none can tell.
func freeBytes(dir string, opts Options) func() (uint64, error) {
	if opts.FreeBytes != nil {
		return opts.FreeBytes
	}
	if opts.FS.fs == nil && statfsFree != nil {
		return func() (uint64, error) { return statfsFree(dir) }
	}
	return nil
}

// holdReserve makes the store's reserve for the writes that meet the disk's end
// (reserve.go), and holds it where free reads the free space: on such a disk.
func holdReserve(fs vfs.FS, dir string, free func() (uint64, error), log *slog.Logger) (*reserve, error) {
	res := newReserve(fs, dir, log)
	if free == nil {
		return res, nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open store in %s: %w", dir, err)
	}
	if err := res.hold(); err != nil {
		return nil, fmt.Errorf("open store in %s: %w", dir, err)
	}
	return res, nil
}

// newStore is the store on the database just opened, before anything is read.
func newStore(db *pebble.DB, unwatch io.Closer, writers *atomic.Int64, fs vfs.FS, dir string, opts Options) *Store {
	s := &Store{
		db:          db,
		unwatchDisk: unwatch,
		writeOpts:   pebble.Sync,
		finishCh:    make(chan *finishReq, 1024),
		closing:     make(chan struct{}),
		done:        make(chan struct{}),
		writers:     writers,
		ids:         newIDFilter(idFilterFirst),
		idsLoaded:   make(chan struct{}),
		refsLoaded:  make(chan struct{}),
		log:         opts.Logger,
		fs:          fs,
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
	if opts.MinFreeBytes > 0 {
		s.minFree = uint64(opts.MinFreeBytes)
	}
	return s
}

// load reads what the store starts from: the event sequence, the policies' ids and the
// mark, checked against the database, after the data format (format.go); then the free
// space, when free reads it, the scan of the references, which may move them first, and
// the format record, written once the migrations ran.
func (s *Store) load(opts Options, existed bool, replayed []string, free func() (uint64, error)) (refScan, error) {
	seq, err := s.startSeq()
	if err == nil {
		err = s.loadPolicyIDs()
	}
	if err != nil {
		return refScan{}, err
	}
	s.seq = seq
	s.durableSeq.Store(seq)
	// The format is checked before anything is written, the mark included: a store
	// this build cannot read is left as it was.
	format, err := s.checkFormat(existed)
	if err != nil {
		return refScan{}, err
	}
	if !s.noMark {
		if err := s.checkMark(opts.AcceptDataLoss, existed, replayed); err != nil {
			return refScan{}, err
		}
	}
	// The free space is read before the first write, which may be the move of the
	// references below: on a disk too full for it, Open fails saying so, rather than
	// meeting the disk's end inside Pebble.
	if free != nil {
		s.checkDisk(free)
	}
	refs, err := s.openRefs()
	if err != nil {
		return refScan{}, err
	}
	if err := s.recordFormat(format); err != nil {
		refs.expiry.Close()
		refs.processing.Close()
		return refScan{}, err
	}
	return refs, nil
}

// run starts the store's goroutines: the mark's writer, the watch of the free space
// when free reads it, the committer, and the loads of the intents' ids and of the
// references refs scans. Close ends them all.
func (s *Store) run(free func() (uint64, error), refs refScan) {
	if !s.noMark {
		go s.markLoop()
	} else {
		close(s.markDone)
	}
	if free != nil {
		go s.diskLoop(free)
	} else {
		close(s.diskDone)
	}
	go s.commitLoop()
	go s.loadIntentIDs()
	go s.loadRefs(refs)
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
// index and filter blocks read again from the file. Pebble counts its memtables
// against the cache, up to two of memTableSize, so 64 MiB of it or more hold blocks.
// The cache holds only blocks read, so a store that is read little stays small.
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
	if s.refusing() {
		return s.Writable()
	}
	s.writers.Add(1)
	defer s.writers.Add(-1)
	s.addNonces(b)
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
		s.closeNonces()
		s.closeMandates()
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
