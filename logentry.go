package intentd

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/strictjson"
)

// LogEntry is one leaf of the transparency log of outcomes (docs/proofs.md): an outcome
// event, bound by the digest of its JSON, with the digest of its signed receipt where it
// has one. Digests rather than the texts keep the evidence (which may be personal) out
// of a log that is kept for ever and may be public, and keep every leaf small enough
// for the uint16 lengths of the tlog-tiles entry bundles; whoever holds the event or the
// receipt checks it against its digest.
type LogEntry struct {
	// EventID is the event's id on the event stream. Ids may skip numbers on a
	// replicated store; the leaf index is the entry's position in the log.
	EventID  uint64 `json:"event_id"`
	Type     State  `json:"type"`
	IntentID string `json:"intent_id"`
	// EventDigest is Base58(SHA-256) of the event's one-line JSON, the bytes the event
	// stream sends as the event's data: a subscriber hashes what it read, as it is.
	EventDigest string `json:"event_digest"`
	// ReceiptDigest is crypto.Digest of the signed receipt's JSON (the "receipt" of a
	// proof bundle); empty for an outcome without a receipt.
	ReceiptDigest string `json:"receipt_digest,omitempty"`
}

// MarshalLogEntry writes an entry as the log stores and hashes it: one line of JSON
// with its members in a fixed order and nothing to escape (ids, types and Base58
// digests only), so that every node of a cluster makes the same bytes of the same
// event, and a reader may parse it with any JSON library.
func MarshalLogEntry(e LogEntry) []byte {
	var b bytes.Buffer
	b.WriteString(`{"event_id":`)
	b.WriteString(strconv.FormatUint(e.EventID, 10))
	b.WriteString(`,"type":"`)
	b.WriteString(string(e.Type))
	b.WriteString(`","intent_id":"`)
	b.WriteString(e.IntentID)
	b.WriteString(`","event_digest":"`)
	b.WriteString(e.EventDigest)
	b.WriteByte('"')
	if e.ReceiptDigest != "" {
		b.WriteString(`,"receipt_digest":"`)
		b.WriteString(e.ReceiptDigest)
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.Bytes()
}

// ParseLogEntry reads an entry that a log served, strictly: the bytes must be exactly
// what MarshalLogEntry writes for the values they hold, so that what a reader is shown
// is what was hashed.
func ParseLogEntry(data []byte) (LogEntry, error) {
	var e LogEntry
	if err := strictjson.Unmarshal(data, &e); err != nil {
		return LogEntry{}, fmt.Errorf("log entry: %w", err)
	}
	if !e.Type.Terminal() {
		return LogEntry{}, fmt.Errorf("log entry: type %q is not an outcome", e.Type)
	}
	if canon, ok := CanonicalIntentID(e.IntentID); !ok || canon != e.IntentID {
		return LogEntry{}, fmt.Errorf("log entry: intent_id %q is not a UUID", e.IntentID)
	}
	digests := []string{e.EventDigest}
	if e.ReceiptDigest != "" {
		digests = append(digests, e.ReceiptDigest)
	}
	for _, d := range digests {
		if b, err := crypto.DecodeBase58(d); err != nil || len(b) != 32 {
			return LogEntry{}, fmt.Errorf("log entry: %q is not a Base58 SHA-256 digest", d)
		}
	}
	if !bytes.Equal(MarshalLogEntry(e), data) {
		return LogEntry{}, fmt.Errorf("log entry: not in the log's own form")
	}
	return e, nil
}

// LogInclusion is what a proof bundle carries of the log (the "log" member of
// GET /intents/{id}/proof): the outcome's leaf, its index, the inclusion proof and the
// signed checkpoint it proves against. proof.Verify checks it offline.
type LogInclusion struct {
	// LeafIndex is the leaf's position in the log, from 0.
	LeafIndex uint64 `json:"leaf_index"`
	// Entry is the leaf's bytes, MarshalLogEntry's form (standard Base64 in JSON).
	Entry []byte `json:"entry"`
	// InclusionProof is the RFC 6962 audit path of the leaf in the checkpoint's tree,
	// each hash standard Base64 in JSON.
	InclusionProof [][]byte `json:"inclusion_proof"`
	// Checkpoint is the C2SP signed note of the tree the proof is against.
	Checkpoint string `json:"checkpoint"`
}

// LogWitnessing is what a proof bundle says of its log checkpoint when the server's
// log has witnesses (the "log_witnesses" member of GET /intents/{id}/proof): whether
// the checkpoint carries enough cosignatures for the witnesses' quorum, and whose.
// It is the server's word, for a reader to see at once; a verifier checks the
// cosignatures themselves against its own policy (proof.VerifyWitnessed).
type LogWitnessing struct {
	// QuorumMet is true when the checkpoint's cosignatures meet the server's quorum.
	QuorumMet bool `json:"quorum_met"`
	// Cosigners are the names, in the server's policy, of the witnesses that
	// cosigned the checkpoint.
	Cosigners []string `json:"cosigners"`
	// Message says, when the quorum is not met, that no checkpoint meeting it covers
	// the leaf yet, and to ask again.
	Message string `json:"message,omitempty"`
}
