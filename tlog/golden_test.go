package tlog

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/golden"
)

// TestFormatsGolden keeps what readers of the log parse byte for byte: the entries,
// a tile, an entry bundle and the signed checkpoint of a fixed key and fixed leaves.
// Ed25519 signs deterministically, so the checkpoint's signature is fixed too.
func TestFormatsGolden(t *testing.T) {
	key, err := crypto.NewSigningKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(Options{Dir: t.TempDir(), Key: key, Origin: "example.com/intentd"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d1, _ := crypto.Digest([]byte(`{"type":"success"}`))
	d2, _ := crypto.Digest([]byte(`{"receipt":{}}`))
	leaves := []leaf{
		{1, intentd.LogEntry{EventID: 1, Type: intentd.StateSuccess, IntentID: "0b7c3f5e-2a71-4c1e-9d43-5f0e6a8b9c21", EventDigest: d1, ReceiptDigest: d2}},
		{2, intentd.LogEntry{EventID: 2, Type: intentd.StateExpired, IntentID: "5d1e0a2b-6c3f-4e7a-8b9d-0f1a2b3c4d5e", EventDigest: d1}},
		{4, intentd.LogEntry{EventID: 4, Type: intentd.StateFailure, IntentID: "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d", EventDigest: d2, ReceiptDigest: d1}},
	}
	if err := l.append(leaves); err != nil {
		t.Fatal(err)
	}
	if _, err := l.publish(); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# verifier key\n%s\n", l.VerifierKey())
	for _, lf := range leaves {
		fmt.Fprintf(&b, "# entry\n%s\n", intentd.MarshalLogEntry(lf.entry))
	}
	tile, err := l.Tile(0, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := l.Entries(0, 3)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "# tile/0/000.p/3 (Base64)\n%s\n", base64.StdEncoding.EncodeToString(tile))
	fmt.Fprintf(&b, "# tile/entries/000.p/3 (Base64)\n%s\n", base64.StdEncoding.EncodeToString(bundle))
	fmt.Fprintf(&b, "# checkpoint\n%s", l.Checkpoint())
	golden.Check(t, filepath.Join("testdata", "formats.golden"), b.String())
}
