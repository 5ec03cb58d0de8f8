package proof_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/proof"
)

const testOrigin = "example.com/intentd-test"

// noteSigner signs a checkpoint with a service key, as the log does.
type noteSigner struct {
	v   note.Verifier
	key *crypto.SigningKey
}

func (s noteSigner) Name() string                    { return s.v.Name() }
func (s noteSigner) KeyHash() uint32                 { return s.v.KeyHash() }
func (s noteSigner) Sign(msg []byte) ([]byte, error) { return s.key.Sign(msg), nil }

// mth and path are RFC 6962's Merkle tree hash and audit path, from their definitions.
func mth(leaves [][]byte) []byte {
	if len(leaves) == 1 {
		return rfc6962.DefaultHasher.HashLeaf(leaves[0])
	}
	k := split(len(leaves))
	return rfc6962.DefaultHasher.HashChildren(mth(leaves[:k]), mth(leaves[k:]))
}

func path(m int, leaves [][]byte) [][]byte {
	if len(leaves) == 1 {
		return nil
	}
	k := split(len(leaves))
	if m < k {
		return append(path(m, leaves[:k]), mth(leaves[k:]))
	}
	return append(path(m-k, leaves[k:]), mth(leaves[:k]))
}

func split(n int) int {
	k := 1
	for k*2 < n {
		k *= 2
	}
	return k
}

// withLog adds to a bundle the log inclusion of its receipt, leaf 2 of 5, under a
// checkpoint signed by key.
func withLog(t *testing.T, b *bundle, key *crypto.SigningKey, change func(inc *intentd.LogInclusion, leaves [][]byte)) {
	t.Helper()
	signed, err := crypto.SignReceipt(b.key, b.receipt)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := signed.MarshalJSON()
	rd, _ := crypto.Digest(raw)
	ed, _ := crypto.Digest([]byte(`{"type":"failure"}`))
	leaves := make([][]byte, 5)
	for i := range leaves {
		leaves[i] = intentd.MarshalLogEntry(intentd.LogEntry{EventID: uint64(10 + i), Type: intentd.StateExpired,
			IntentID: "00000000-0000-4000-8000-00000000000" + string(rune('0'+i)), EventDigest: ed})
	}
	leaves[2] = intentd.MarshalLogEntry(intentd.LogEntry{EventID: 12, Type: intentd.State(b.receipt.Outcome), IntentID: b.receipt.IntentID,
		EventDigest: ed, ReceiptDigest: rd})
	inc := &intentd.LogInclusion{LeafIndex: 2, Entry: leaves[2], InclusionProof: path(2, leaves)}
	if change != nil {
		change(inc, leaves)
	}
	v, err := proof.LogVerifier(testOrigin, key.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	text := log.Checkpoint{Origin: testOrigin, Size: uint64(len(leaves)), Hash: mth(leaves)}.Marshal()
	cp, err := note.Sign(&note.Note{Text: string(text)}, noteSigner{v, key})
	if err != nil {
		t.Fatal(err)
	}
	if inc.Checkpoint == "" {
		inc.Checkpoint = string(cp)
	}
	data, _ := json.Marshal(inc)
	prev := b.edit
	b.edit = func(p map[string]json.RawMessage) {
		if prev != nil {
			prev(p)
		}
		p["log"] = data
	}
}

// TestVerifyLog checks the log inclusion of a bundle: one that holds, and each way one
// can fail to show this receipt in the log the receipt key signs.
func TestVerifyLog(t *testing.T) {
	service := serviceKey.PublicKey()
	b := newBundle(t)
	withLog(t, b, serviceKey, nil)
	rep, err := proof.Verify(b.encode(t), service)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Log == nil || rep.Log.LeafIndex != 2 || rep.Log.TreeSize != 5 || rep.Log.Origin != testOrigin {
		t.Fatalf("report.Log = %+v", rep.Log)
	}
	if rep, err := proof.Verify(newBundle(t).encode(t), service); err != nil || rep.Log != nil ||
		!strings.Contains(strings.Join(rep.Notes, "\n"), "no transparency log inclusion") {
		t.Fatalf("a bundle without a log: %+v, %v", rep, err)
	}

	tests := []struct {
		name    string
		key     *crypto.SigningKey
		change  func(inc *intentd.LogInclusion, leaves [][]byte)
		message string
	}{
		{"checkpoint signed by another key", otherKey, nil, "does not verify under the receipt key"},
		{"entry of another intent", serviceKey, func(inc *intentd.LogInclusion, leaves [][]byte) {
			inc.Entry, inc.LeafIndex, inc.InclusionProof = leaves[1], 1, path(1, leaves)
		}, "log entry is of intent"},
		{"entry of another receipt", serviceKey, func(inc *intentd.LogInclusion, leaves [][]byte) {
			inc.Entry = bytes.Replace(inc.Entry, []byte(`"receipt_digest":"`), []byte(`"receipt_digest":"1`), 1)
			inc.Entry = bytes.Replace(inc.Entry, []byte(`1"}`), []byte(`"}`), 1)
		}, "log entry"},
		{"a proof hash changed", serviceKey, func(inc *intentd.LogInclusion, _ [][]byte) {
			inc.InclusionProof[0] = bytes.Repeat([]byte{1}, 32)
		}, "inclusion proof of leaf 2 in 5 does not verify"},
		{"another leaf index", serviceKey, func(inc *intentd.LogInclusion, _ [][]byte) { inc.LeafIndex = 3 }, "does not verify"},
		{"an index beyond the tree", serviceKey, func(inc *intentd.LogInclusion, _ [][]byte) { inc.LeafIndex = 5 }, "beyond the checkpoint"},
		{"an entry not in the log's form", serviceKey, func(inc *intentd.LogInclusion, _ [][]byte) {
			inc.Entry = append([]byte(" "), inc.Entry...)
		}, "log entry"},
		{"no checkpoint", serviceKey, func(inc *intentd.LogInclusion, _ [][]byte) { inc.Checkpoint = "x" }, "no origin line"},
		{"an origin that opens like a receipt", serviceKey, func(inc *intentd.LogInclusion, _ [][]byte) {
			inc.Checkpoint = "{\n5\nAAAA\n\n"
		}, "must not begin with '{'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBundle(t)
			withLog(t, b, tt.key, tt.change)
			_, err := proof.Verify(b.encode(t), service)
			ve, ok := err.(*proof.VerifyError)
			if !ok || ve.Check != proof.CheckLog || !strings.Contains(ve.Message, tt.message) {
				t.Fatalf("Verify = %v, want the log check to fail with %q", err, tt.message)
			}
		})
	}
}

// FuzzParseCheckpoint checks that a checkpoint is accepted only whole: signed by the
// key under the origin asked for, with that origin and a 32-byte root.
func FuzzParseCheckpoint(f *testing.F) {
	v, err := proof.LogVerifier(testOrigin, serviceKey.PublicKey())
	if err != nil {
		f.Fatal(err)
	}
	text := log.Checkpoint{Origin: testOrigin, Size: 5, Hash: bytes.Repeat([]byte{3}, 32)}.Marshal()
	good, err := note.Sign(&note.Note{Text: string(text)}, noteSigner{v, serviceKey})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := proof.ParseCheckpoint(good, testOrigin, serviceKey.PublicKey()); err != nil {
		f.Fatalf("a checkpoint the log signs is refused: %v", err)
	}
	f.Add(good)
	f.Add([]byte(testOrigin + "\n5\nAAAA\n\n— " + testOrigin + " AAAA\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cp, err := proof.ParseCheckpoint(data, testOrigin, serviceKey.PublicKey())
		if err != nil {
			return
		}
		if cp.Origin != testOrigin || len(cp.Hash) != 32 {
			t.Fatalf("accepted %+v", cp)
		}
		if _, err := note.Open(data, note.VerifierList(v)); err != nil {
			t.Fatalf("accepted a checkpoint whose note does not open: %v", err)
		}
	})
}
