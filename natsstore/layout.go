package natsstore

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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

// Subjects. An id that is not a plain subject token (ids are UUIDs and policy hashes,
// so this is for tests and the unexpected) is written base64url after a '='.
func (s *Store) subject(kind, id string) string { return s.prefix + "." + kind + "." + token(id) }

func (s *Store) eventSubject() string { return s.prefix + ".event" }

func (s *Store) floorSubject() string { return s.prefix + ".meta.floor" }

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

func policyMsg(subject string, after uint64, bytecode, source []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	rec := binary.AppendUvarint(nil, uint64(len(bytecode)))
	rec = append(rec, bytecode...)
	m.Data = append(rec, source...)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(after, 10))
	m.Header.Set(hdrRollup, "sub")
	return m
}

func decodePolicy(id string, rec []byte) (bytecode, source []byte, err error) {
	n, w := binary.Uvarint(rec)
	if w <= 0 || n > uint64(len(rec)-w) {
		return nil, nil, fmt.Errorf("policy record %s is corrupt", id)
	}
	return rec[w : w+int(n)], rec[w+int(n):], nil
}

func entryOf(seq uint64, h nats.Header) entry {
	e := entry{seq: seq, created: seq, phase: h.Get(hdrPhase), policy: h.Get(hdrPolicy)}
	if ns, err := strconv.ParseInt(h.Get(hdrExpires), 10, 64); err == nil {
		e.expires = time.Unix(0, ns)
	}
	if c, err := strconv.ParseUint(h.Get(hdrCreated), 10, 64); err == nil {
		e.created = c
	}
	return e
}
