package intentd

import (
	"context"
	"errors"
	"time"
)

// Errors a Store returns; callers compare with errors.Is. A store may wrap them.
var (
	// ErrNotFound: no record under that key.
	ErrNotFound = errors.New("not found")
	// ErrExists: an intent with that id is already stored.
	ErrExists = errors.New("already exists")
	// ErrPolicyNotFound: CreateIntent named a policy that is not stored.
	ErrPolicyNotFound = errors.New("policy not found")
	// ErrPolicyInUse: DeletePolicy of a policy that an open or processing intent names.
	ErrPolicyInUse = errors.New("policy in use")
	// ErrStoreClosed: the store was closed.
	ErrStoreClosed = errors.New("store closed")
	// ErrStorageFull: the store refuses writes while its storage is (nearly) full, so
	// that what it acknowledged stays whole; reads go on, and writes resume on their
	// own once space returns.
	ErrStorageFull = errors.New("storage full")
	// ErrStale: a transition was refused because the intent was written by another
	// writer since the caller read it (another node, or an activation that outlived its
	// move). Nothing was written; the caller reads the intent again before it decides
	// anything.
	ErrStale = errors.New("stale intent")
	// ErrNonceSpent: SpendNonce of a nonce already spent and not yet expired.
	ErrNonceSpent = errors.New("nonce spent")
)

// Store is the durable state an engine persists through. persistence.Store is the one on
// Pebble. Every write returns once it is durable; snapshots are opaque bytes the engine
// writes and reads back. The context bounds a call to a store that waits on the network;
// a local store may ignore it.
type Store interface {
	// PutPolicy stores a compiled policy; an id that exists is left as it is (created false).
	PutPolicy(ctx context.Context, id string, bytecode, source []byte) (created bool, err error)
	// Policy returns a policy's bytecode and source, or ErrNotFound.
	Policy(ctx context.Context, id string) (bytecode, source []byte, err error)
	// PolicyBytecode returns the bytecode of a policy that is or once was stored, for
	// proofs, or ErrNotFound.
	PolicyBytecode(ctx context.Context, id string) ([]byte, error)
	// DeletePolicy removes a policy: ErrNotFound, or ErrPolicyInUse while an open or
	// processing intent names it.
	DeletePolicy(ctx context.Context, id string) error
	// CreateIntent stores a new open intent with its deadline and its policy reference:
	// ErrExists for a taken id, ErrPolicyNotFound for a missing policy.
	CreateIntent(ctx context.Context, id, policyID string, snapshot []byte, expiresAt time.Time) error
	// Intent returns an intent's snapshot, or ErrNotFound.
	Intent(ctx context.Context, id string) ([]byte, error)
	// BeginProcessing writes an intent's processing snapshot and takes it out of the
	// expiry index; the intent still names policyID, which stays in use.
	BeginProcessing(ctx context.Context, id, policyID string, snapshot []byte, expiresAt time.Time) error
	// Finish writes a terminal snapshot with its event (from NewEvent) and returns the
	// event's id. The event sink hears of the event, with its id and time, once it is
	// durable. An expiry (an event of type expired) replaces an open intent only: over
	// a processing one it is refused with ErrStale, the accepted proposal standing. An
	// outcome (success or failure) replaces a processing intent only, and is refused
	// with ErrStale over any other: BeginProcessing moves an intent from open to
	// processing once, so an outcome over processing ends the one proposal that
	// processing record holds.
	Finish(ctx context.Context, id, policyID string, snapshot []byte, expiresAt time.Time, ev Event) (uint64, error)
	// Processing lists the intents that are processing.
	Processing(ctx context.Context) ([]string, error)
	// DueExpiries lists up to limit open intents whose deadline is at or before now.
	DueExpiries(ctx context.Context, now time.Time, limit int) ([]string, error)
	// NextExpiry reports the earliest deadline of an open intent.
	NextExpiry(ctx context.Context) (time.Time, bool, error)
	// SetEventSink names the function told of each durable event, in id order. It
	// must not block; it is set before the first Finish.
	SetEventSink(func(Event))
	// Events calls fn for up to limit events after the given id, in order, each with
	// its type and intent id.
	Events(ctx context.Context, after uint64, limit int, fn func(Event) error) error
	// EventBounds reports the oldest retained event id (0 for none) and the id of the
	// last event written, retained or pruned: an event the log gave, so that a reader
	// told of it can find it or learn it was pruned. Ids a store handed out for events it
	// then lost (an accepted loss, on Pebble) are not counted.
	EventBounds(ctx context.Context) (first, last uint64, err error)
	// PrunedThrough reports the id of the newest event pruned, 0 when none was: a
	// reader who resumes after an older id has missed events.
	PrunedThrough(ctx context.Context) (uint64, error)
	// PruneEvents keeps the newest keep events and none older than olderThan, and
	// reports how many it pruned. An error may come with a count: a store that could
	// prune by age but not by count prunes by age, and says why not by count.
	PruneEvents(ctx context.Context, keep uint64, olderThan time.Time) (int, error)
	// SpendNonce records the nonce of an agent's signature, scoped by the agent's key,
	// until until: ErrNonceSpent when it is recorded and until has not passed, for
	// every caller of the store (each node of a cluster). The record is durable no
	// later than the store's next synced write, the proposal it came with. A recorded nonce
	// goes once until has passed: a signature is refused after its expiry anyway.
	SpendNonce(ctx context.Context, key, nonce string, until time.Time) error
}

// EventPacer is a store that hands its events to the sink a window at a time, and can
// make the windows short or long: the NATS store, which pulls them from the stream.
// Short windows cost a node a wake-up for every few events, whoever reads them; long
// ones delay the events by up to the window. The engine tells it whether anyone waits:
// a subscriber of the events other than a patient one (Filter.Patient).
type EventPacer interface {
	// EventsAwaited says whether a subscriber that is not patient follows the events
	// now. It must not block. A store not told otherwise takes them to be awaited.
	EventsAwaited(awaited bool)
}

// EventFollower is a store that hands its events to the sink by following what every
// node writes, and can stop while nobody on this node reads them: the NATS store. In a
// cluster, a member that keeps no log and serves no subscriber or webhook then follows
// no event, so that following the events costs the members that serve them, whatever
// the cluster's size. The engine's bus tells it when its readers come and go.
type EventFollower interface {
	// UnwantEvents says that nobody on this node reads the events now. It must not
	// block. A store told so stops handing them to the sink once nobody has wanted
	// them for a moment; a store not told so hands them all.
	UnwantEvents()
	// WantEvents says that somebody on this node reads the events again, and returns
	// once the store hands the sink every event after the id it returns. That id is
	// the newest event written when a store that had stopped started again: the sink
	// never had the events since it stopped up to it, and a reader finds them in the
	// log. It is 0 when the store never stopped.
	WantEvents(ctx context.Context) (skipped uint64, err error)
}

// NearbyReader is a store whose replicas near a node can answer the read of an intent,
// which then need not go to the one replica that has every write: the NATS store,
// whose stream's leader serves that read otherwise. A replica may not hold the latest
// writes yet, so what it answers may be an older snapshot of the intent than the
// store's. It is for a reader that writes against what it read: the store refuses that
// write with ErrStale, and the reader reads again through Intent.
type NearbyReader interface {
	// IntentNearby returns an intent's snapshot as a replica near this node holds it,
	// or as Intent does when no such replica answers or the one that does holds none;
	// ErrNotFound only when Intent says so.
	IntentNearby(ctx context.Context, id string) ([]byte, error)
}

// IndexKeeper is a store that keeps its index of the open and processing intents (their
// deadlines, the processing list, the intents that hold a policy in use) by following
// what every node writes, and can leave that following to the nodes that need the
// index: the NATS store. In a cluster, the member that scans for expiries and resumes
// the proposals of members that left keeps it, and the others read only what they
// write, so that the cost of the index is one member's whatever the cluster's size.
type IndexKeeper interface {
	// KeepIndex says whether this node scans the index. It must not block. A store
	// told false stops following the intents once nothing has asked for the index for
	// a moment, and follows them again, loading the index anew, when asked for what
	// it holds (the processing list, the due and next expiries, a policy's delete):
	// every answer stays right, and the first after a pause costs a load.
	KeepIndex(keep bool)
}
