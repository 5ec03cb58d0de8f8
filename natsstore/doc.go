// Package natsstore is the durable store of intentd on NATS JetStream, so that intents
// outlive a machine and several nodes can share them. It keeps the promises of
// intentd.Store that the Pebble store keeps, and no NATS type leaves the package.
//
// # Layout
//
// One stream, named for the prefix (INTENTD), holds everything under <prefix>.>:
//
//	<prefix>.intent.<id>    an intent's snapshot, the last one only (each write is a rollup),
//	                        with its phase, policy and deadline in headers
//	<prefix>.policy.<id>    a policy's bytecode and source, or a tombstone
//	<prefix>.bytecode.<id>  a policy's bytecode, kept after a delete for proofs
//	<prefix>.event          the event log: one message per outcome, with its receipt's
//	                        digest in a header for every node's transparency log
//	<prefix>.meta.floor     the lowest event id not pruned
//	<prefix>.tlog.<n>       the transparency log's entry bundle n, the longest written
//	                        (log.go); never pruned
//	<prefix>.nonce.<digest> a spent nonce of an agent's signature, until its time to live
//	                        ends (nonce.go)
//	<prefix>.mandate.<id>   a mandate's record, the last one only (each update is a
//	                        rollup); its stream sequence is its revision (mandate.go)
//	<prefix>.webhook.<id>   a webhook endpoint's record, or its tombstone, the last one
//	                        only; its stream sequence is its revision (webhook.go)
//
// One stream rather than a stream and KV buckets, because JetStream's atomic batches and
// its one order work within one stream: an intent's terminal write (snapshot and event)
// is one atomic batch, and creates and policy deletes meet in the stream's order (see
// DeletePolicy and CreateIntent), which several streams could not give. The subjects,
// the headers and the records' encodings are in layout.go.
//
// Every write names the sequence of the record it replaces (Nats-Expected-Last-Subject-
// Sequence): a create expects none, so of racing creates of one id, on any node, one
// wins and the others get intentd.ErrExists; a stale writer of an intent is refused.
// A mandate's writer names the revision it read, which is the sequence of the record,
// so of two writers that read one revision, on any nodes, one writes the next.
//
// The interface carries no revision from the engine, so a transition is also written
// only from the phase it starts from (processing from open, an expiry from open, an
// outcome from processing): of two writers on two nodes one terminal write succeeds,
// and nothing is written after it.
//
// A policy delete writes a tombstone first, so that every create not yet committed
// fails its check, waits until the index has followed the stream up to it, and only then
// looks for intents naming the policy; if it finds one it writes the policy back and
// answers ErrPolicyInUse. A create that raced such a refused delete may have been told
// ErrPolicyNotFound; none is ever stored against a deleted policy. The second step of a
// delete or a create runs whatever becomes of its caller, and a tombstone that a delete
// cut off between its steps left while an intent needs the policy is found by every
// node's follower and put back, and an intent a create so cut off left open after a
// tombstone is withdrawn (twostep.go).
//
// An event's id is its stream sequence. Ids increase in the one order every node reads,
// but skip the sequences of the other records: a reader resumes after any id, assigned
// or not, and gets the next event.
//
// The expiry index, the processing set and the policies' states are in memory, built at
// Open from the last record of each subject (a consumer of headers only, pull.go) and
// kept by following the stream, so that another node's writes reach them too. A read of
// them costs no round trip; a scan is a pass over the open intents. A node told it does
// not scan them (KeepIndex) stops following the intents' records, and loads them again
// when asked (scope.go): in a cluster, one member follows every intent. Likewise a node
// told that nobody on it reads the events (UnwantEvents) stops following them, and
// follows them again from the newest when told they are wanted (eventscope.go).
//
// Records are read from the stream's leader, which holds every acknowledged write
// (leaderget.go), but for an intent read before its proposal (IntentNearby): that read
// takes the nearest replica, and the write after it, fenced by the sequence read, finds
// a replica that was behind.
//
// Beside the stream, a key-value bucket <PREFIX>_MARKS records what the store made (the
// stream, and buckets opened with Store.Bucket), so that one deleted is refused at the
// next start rather than made again empty (marks.go). While the store is open it checks
// every few seconds that each is there, the one it opened and laid out as it needs;
// otherwise every call fails with a busy error coded store_missing or store_changed
// (health.go).
//
// # Authentication
//
// Open connects with a credentials file, a token or an NKey seed (auth.go). Embed can
// make the server admit one NKey user alone, whose seed it keeps in a file of mode 0600,
// and refuses cluster routes open beyond loopback with no authorization.
//
// # Costs
//
// Measured on the development machine (2 cores, shared with other work, so the figures
// spread): on one embedded server syncing every write, a creation took 6-12 ms and a
// terminal write 7-25 ms under 64 writers; a single synced message takes 0.6 ms, and the
// rest is the atomic batch, which one server stages in files of its own per batch. On a
// three-server cluster on loopback (R3), where batches are staged in memory, a creation
// took 1.6-3.9 ms alone and a terminal write 0.7-1.4 ms under 64 writers. Creations
// naming one policy do not overlap on R3: the leader lets one check of a subject's
// sequence be in flight at a time and refuses the others, which are tried again, so
// they ran at about 160 a second. A later layout could check the policy on the delete's
// side only (a delete that waits out the creates in flight) to lift that limit.
//
// # Durability
//
// A write returns once JetStream acknowledges it: on R3 once a quorum of replicas has
// it. On one server it is on disk only if the server syncs every write (sync_interval:
// always); Embed sets it, a server run elsewhere must be configured so.
package natsstore
