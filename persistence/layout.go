package persistence

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/intentd/intentd"
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
	prefixGap        = 'g' // g<8-byte first id> -> 8-byte last id: a gap of the event ids (eventids.go)
	prefixLogBundle  = 'l' // l<8-byte bundle index> -> the bundle: the transparency log's entries (log.go)
	prefixNonce      = 'n' // n<sha-256 of key and nonce> -> 8-byte unix nanos: a spent nonce, until then (nonce.go)
	prefixNonceEnd   = 'o' // o<8-byte unix nanos><sha-256 of key and nonce> -> "": the spent nonces by when they go
	prefixMandate    = 'a' // a<mandate id> -> 8-byte revision, then the record (mandate.go)
	prefixWebhook    = 'h' // h<webhook id> -> 8-byte revision, then the record (webhook.go)
	// keyEventSeq is a key of its own, not a table: no table may take the prefix 'm',
	// whose key of id "seq" it would be.
	keyEventSeq = "mseq"
)

// key is a key of the table of prefix: the parts after it, a zero byte between two.
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

// expiryKey is the key of intent id's deadline at in the expiry index, which it orders.
func expiryKey(at time.Time, id string) []byte {
	k := make([]byte, 0, expiryIDAt+len(id))
	k = append(k, prefixExpiry)
	k = binary.BigEndian.AppendUint64(k, uint64(at.UnixNano()))
	return append(k, id...)
}

// eventKey is the key of event id, in id order.
func eventKey(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixEvent}, id)
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

// policyRecord is a policy's record: its bytecode's length, its bytecode and its source.
func policyRecord(bytecode, source []byte) []byte {
	rec := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(bytecode)+len(source)), uint64(len(bytecode)))
	rec = append(rec, bytecode...)
	return append(rec, source...)
}

// decodePolicy reads a policy's record (policyRecord).
func decodePolicy(id string, rec []byte) (bytecode, source []byte, err error) {
	n, w := binary.Uvarint(rec)
	if w <= 0 || n > uint64(len(rec)-w) {
		return nil, nil, fmt.Errorf("policy record %s is corrupt", id)
	}
	return rec[w : w+int(n)], rec[w+int(n):], nil
}

// eventRecord is an event's record: the time it was written, then its JSON.
func eventRecord(at time.Time, data []byte) []byte {
	rec := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(data)), uint64(at.UnixNano()))
	return append(rec, data...)
}

// decodeEvent reads an event record: its time, then its JSON, whose type and intent id
// it reads back for the subscribers' filters.
func decodeEvent(k, v []byte) (intentd.Event, error) {
	if len(k) != 9 || len(v) < 8 {
		return intentd.Event{}, fmt.Errorf("event record %x is corrupt", k)
	}
	return intentd.DecodeEvent(binary.BigEndian.Uint64(k[1:]), time.Unix(0, int64(binary.BigEndian.Uint64(v[:8]))), bytes.Clone(v[8:]))
}

// gapKey is the key of the gap of event ids from lo.
func gapKey(lo uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixGap}, lo)
}

// logBundleKey is the key of the transparency log's entry bundle index.
func logBundleKey(index uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixLogBundle}, index)
}

// writeKey is the key of write number n; only the highest is kept for long.
func writeKey(n uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixWrite}, n)
}
