package natsstore

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mr-tron/base58"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// Headers the store writes beside a record. The snapshot's headers carry what the
// indexes need, so that a node builds them from headers alone.
const (
	hdrPhase   = "Intentd-Phase"   // open, processing or done, on an intent snapshot
	hdrPolicy  = "Intentd-Policy"  // the policy id an intent names
	hdrExpires = "Intentd-Expires" // an intent's deadline, Unix nanoseconds
	hdrOp      = "Intentd-Op"      // opDelete on a policy tombstone, opWithdrawn on an intent
	hdrFloor   = "Intentd-Floor"   // on the floor record: events below it are pruned
	hdrPruned  = "Intentd-Pruned"  // on the floor record: the newest pruned event's id
	// hdrCreated is the sequence of an intent's open snapshot, on its later ones: a
	// policy delete looks for intents created before its tombstone (see DeletePolicy).
	hdrCreated = "Intentd-Created"
	// hdrWrite names one write of a fenced record, so that a write whose answer was
	// lost can be told apart from another writer's when it is looked for.
	hdrWrite = "Intentd-Write"
	// hdrReceipt is on an outcome's event: the digest of its receipt, or noReceipt,
	// so that every node's transparency log has it without reading the snapshot.
	hdrReceipt = "Intentd-Receipt-Digest"

	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
	hdrRollup      = "Nats-Rollup"
)

// Operations a record may carry in hdrOp.
const (
	opDelete    = "del"       // a policy's tombstone
	opWithdrawn = "withdrawn" // an intent created against a policy deleted first: as if never stored
)

const (
	phaseOpen       = "open"
	phaseProcessing = "processing"
	phaseDone       = "done"
)

// The kinds of subject: the token after the prefix. doc.go draws the layout.
const (
	kindIntent   = "intent"   // <prefix>.intent.<id>
	kindPolicy   = "policy"   // <prefix>.policy.<id>
	kindBytecode = "bytecode" // <prefix>.bytecode.<id>
	kindEvent    = "event"    // <prefix>.event
	kindMeta     = "meta"     // <prefix>.meta.floor
	kindLog      = "tlog"     // <prefix>.tlog.<index>
	kindNonce    = "nonce"    // <prefix>.nonce.<sha-256 of an agent key and nonce, hex>
	kindMandate  = "mandate"  // <prefix>.mandate.<id>
	kindWebhook  = "webhook"  // <prefix>.webhook.<id>
)

// Subjects. An id that is not a plain subject token (ids are UUIDs and policy hashes,
// so this is for tests and the unexpected) is written base64url after a '='.
func (s *Store) subject(kind, id string) string { return s.prefix + "." + kind + "." + token(id) }

func (s *Store) intentSubject(id string) string   { return s.subject(kindIntent, id) }
func (s *Store) policySubject(id string) string   { return s.subject(kindPolicy, id) }
func (s *Store) bytecodeSubject(id string) string { return s.subject(kindBytecode, id) }
func (s *Store) eventSubject() string             { return s.prefix + "." + kindEvent }
func (s *Store) floorSubject() string             { return s.prefix + "." + kindMeta + ".floor" }
func (s *Store) mandateSubject(id string) string  { return s.subject(kindMandate, id) }
func (s *Store) webhookSubject(id string) string  { return s.subject(kindWebhook, id) }

// logSubject is the subject of the transparency log's entry bundle index. It is in the
// store's one stream, which is never purged but for the event subject, so the bundles
// outlive the events, and every node of a cluster reads them.
func (s *Store) logSubject(index uint64) string {
	return s.prefix + "." + kindLog + "." + strconv.FormatUint(index, 10)
}

// streamSubjects are the subjects of the stream: all under the prefix.
func (s *Store) streamSubjects() []string { return []string{s.prefix + ".>"} }

// indexSubjects are the subjects the indexes are built from.
func (s *Store) indexSubjects() []string {
	return []string{s.prefix + "." + kindIntent + ".*", s.prefix + "." + kindPolicy + ".*", s.floorSubject()}
}

// policyIndexSubjects are the subjects a follower narrowed to the policies follows
// (scope.go): the indexes' without the intents'.
func (s *Store) policyIndexSubjects() []string {
	return []string{s.prefix + "." + kindPolicy + ".*", s.floorSubject()}
}

// parseSubject is the one reader of the store's subjects: the kind of subject and the
// id it names, decoded, or ok false for a subject outside the store's prefix. The id of
// the floor record is "floor", of an event empty.
func (s *Store) parseSubject(subject string) (kind, id string, ok bool) {
	rest, ok := strings.CutPrefix(subject, s.prefix+".")
	if !ok {
		return "", "", false
	}
	kind, id, _ = strings.Cut(rest, ".")
	return kind, untoken(id), true
}

func token(id string) string {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "=" + base64.RawURLEncoding.EncodeToString([]byte(id))
		}
	}
	if id == "" {
		return "="
	}
	return id
}

func untoken(t string) string {
	if strings.HasPrefix(t, "=") {
		b, err := base64.RawURLEncoding.DecodeString(t[1:])
		if err == nil {
			return string(b)
		}
	}
	return t
}

func validPrefix(p string) bool {
	for _, t := range strings.Split(p, ".") {
		if t == "" || token(t) != t {
			return false
		}
	}
	return true
}

// snapshotMsg is an intent's snapshot record; created is 0 for the open snapshot, whose
// own sequence it is.
func snapshotMsg(subject, phase, policy string, created uint64, expires time.Time, snapshot []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = snapshot
	m.Header.Set(hdrPhase, phase)
	if created != 0 {
		m.Header.Set(hdrCreated, strconv.FormatUint(created, 10))
	}
	m.Header.Set(hdrPolicy, policy)
	m.Header.Set(hdrExpires, strconv.FormatInt(expires.UnixNano(), 10))
	return m
}

// policyMsg is a policy's record, written after the record at sequence after (0 for
// none), which it replaces.
func policyMsg(subject string, after uint64, bytecode, source []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = policyRecord(bytecode, source)
	return fenced(rollUp(m), after)
}

// policyRecord is a policy's record: its bytecode's length, its bytecode and its
// source.
func policyRecord(bytecode, source []byte) []byte {
	rec := binary.AppendUvarint(nil, uint64(len(bytecode)))
	rec = append(rec, bytecode...)
	return append(rec, source...)
}

// bytecodeMsg is a policy's bytecode, which replaces any before it: it is the same for
// an id.
func bytecodeMsg(subject string, bytecode []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = bytecode
	return rollUp(m)
}

// tombstoneMsg is a policy's tombstone, written after its record at sequence after,
// which it carries (rec): the roll-up removes that record, and whoever puts the policy
// back, the delete's second step or another node's repair of a delete cut off before
// it, writes it again from here.
func tombstoneMsg(subject string, after uint64, rec []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = rec
	m.Header.Set(hdrOp, opDelete)
	return fenced(rollUp(m), after)
}

// withdrawnMsg is the record of an intent withdrawn, written after its open snapshot at
// sequence after.
func withdrawnMsg(subject string, after uint64) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Header.Set(hdrOp, opWithdrawn)
	return fenced(rollUp(m), after)
}

// noReceipt is hdrReceipt's value on an outcome without a receipt.
const noReceipt = "-"

// eventMsg is an event's record: its JSON, and with d its receipt's digest.
func eventMsg(subject string, data []byte, d *intentd.Decided) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	// A digest not known here writes no header: a reader takes the receipt from the
	// snapshot.
	if digest, known := d.Digest(); known {
		m.Header.Set(hdrReceipt, cmp.Or(digest, noReceipt))
	}
	return m
}

// decidedOf is what an event's record says beyond its JSON: its receipt's digest, or
// nil when the record does not say (written by a release before it did) or says
// something that is not a digest, which the reader then takes from the snapshot.
func decidedOf(h nats.Header) *intentd.Decided {
	v := h.Get(hdrReceipt)
	switch {
	case v == noReceipt:
		return &intentd.Decided{}
	case v == "":
		return nil
	}
	if b, err := base58.Decode(v); err != nil || len(b) != sha256.Size {
		return nil
	}
	return &intentd.Decided{ReceiptDigest: v}
}

// floorMsg is the floor record: events below floor are pruned, the newest of them
// pruned.
func floorMsg(subject string, floor, pruned uint64) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Header.Set(hdrFloor, strconv.FormatUint(floor, 10))
	m.Header.Set(hdrPruned, strconv.FormatUint(pruned, 10))
	return rollUp(m)
}

// bundleMsg is an entry bundle of the transparency log, written after the shorter one
// at sequence after (0 for none), which it replaces.
func bundleMsg(subject string, after uint64, bundle []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = bundle
	return fenced(rollUp(m), after)
}

// mandateMsg is a mandate's record, written after the record at sequence after (0 for
// none: a create), which it replaces, so that the stream keeps one record a mandate.
func mandateMsg(subject string, after uint64, record []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = record
	return fenced(rollUp(m), after)
}

// fenced makes m a write that the stream takes only while the last record on its
// subject is the one at sequence after (0: while there is none).
func fenced(m *nats.Msg, after uint64) *nats.Msg {
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(after, 10))
	return m
}

// rollUp makes m replace every record before it on its subject.
func rollUp(m *nats.Msg) *nats.Msg {
	m.Header.Set(hdrRollup, "sub")
	return m
}

// decodePolicy reads a policy's record (policyRecord).
func decodePolicy(id string, rec []byte) (bytecode, source []byte, err error) {
	n, w := binary.Uvarint(rec)
	if w <= 0 || n > uint64(len(rec)-w) {
		return nil, nil, fmt.Errorf("policy record %s is corrupt", id)
	}
	return rec[w : w+int(n)], rec[w+int(n):], nil
}

// entryOf reads what the index keeps of an intent from the headers of its record at
// seq (snapshotMsg); a withdrawn record has no phase.
func entryOf(seq uint64, h nats.Header) entry {
	// The index keeps an entry for every open intent: its strings are copied out of the
	// message's headers, or each entry would hold the whole decoded header alive.
	e := entry{seq: seq, created: seq, phase: phaseOf(h.Get(hdrPhase)), policy: strings.Clone(h.Get(hdrPolicy))}
	if ns, err := strconv.ParseInt(h.Get(hdrExpires), 10, 64); err == nil {
		e.expires = time.Unix(0, ns)
	}
	if c, err := strconv.ParseUint(h.Get(hdrCreated), 10, 64); err == nil {
		e.created = c
	}
	return e
}

// isTombstone reports a policy's tombstone (tombstoneMsg).
func isTombstone(h nats.Header) bool { return h.Get(hdrOp) == opDelete }

// isWithdrawn reports the record of a withdrawn intent (withdrawnMsg).
func isWithdrawn(h nats.Header) bool { return h.Get(hdrOp) == opWithdrawn }

// floorOf reads the floor record (floorMsg); one older than hdrPruned says only the
// floor, and the newest pruned event is the one below it.
func floorOf(h nats.Header) (floor, pruned uint64, ok bool) {
	floor, err := strconv.ParseUint(h.Get(hdrFloor), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	pruned = floor - 1
	if p, err := strconv.ParseUint(h.Get(hdrPruned), 10, 64); err == nil {
		pruned = p
	}
	return floor, pruned, true
}

// phaseOf returns the phase constant a header names, or a copy of an unknown one.
func phaseOf(s string) string {
	switch s {
	case phaseOpen:
		return phaseOpen
	case phaseProcessing:
		return phaseProcessing
	case phaseDone:
		return phaseDone
	}
	return strings.Clone(s)
}
