package natsstore

import (
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	"github.com/mr-tron/base58"
	"github.com/nats-io/nats.go"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// TestDecidedOf reads an event record's receipt digest header: a digest, "none", or
// nothing the reader can trust, which leaves the receipt to be read from the snapshot.
func TestDecidedOf(t *testing.T) {
	digest := digestOf("a receipt")
	tests := []struct {
		name, value string
		want        *intentd.Decided
	}{
		{"a digest", digest, &intentd.Decided{ReceiptDigest: digest}},
		{"no receipt", noReceipt, &intentd.Decided{}},
		{"absent: an earlier release's record", "", nil},
		{"not Base58", "0OIl", nil},
		{"Base58 of another length", base58.Encode([]byte("short")), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := nats.Header{}
			if tt.value != "" {
				h.Set(hdrReceipt, tt.value)
			}
			got := decidedOf(h)
			if (got == nil) != (tt.want == nil) || (got != nil && (got.ReceiptDigest != tt.want.ReceiptDigest || got.Receipt != nil)) {
				t.Errorf("decidedOf(%q) = %+v, want %+v", tt.value, got, tt.want)
			}
		})
	}
	t.Run("written and read back", func(t *testing.T) {
		for _, d := range []*intentd.Decided{nil, {}, {ReceiptDigest: digest, Receipt: []byte(`{"a":1}`)}, {Receipt: []byte(`{"a":1}`)}} {
			got := decidedOf(eventMsg("e", nil, d).Header)
			switch {
			case d == nil || (d.ReceiptDigest == "" && d.Receipt != nil):
				if got != nil {
					t.Errorf("%+v came back as %+v, want nothing said", d, got)
				}
			case got == nil || got.ReceiptDigest != d.ReceiptDigest:
				t.Errorf("%+v came back as %+v", d, got)
			}
		}
	})
}

// TestEventsCarryReceiptDigest finishes intents with and without a receipt on one node
// and reads their events on another, followed and read back: each carries the digest
// its writer gave, so that no node reads a snapshot for its log.
func TestEventsCarryReceiptDigest(t *testing.T) {
	ctx := context.Background()
	url := embed(t).URL()
	w := open(t, url)
	defer w.Close()
	r := open(t, url)
	defer r.Close()
	var mu sync.Mutex
	followed := map[string]*intentd.Decided{}
	r.SetEventSink(func(ev intentd.Event) {
		mu.Lock()
		followed[ev.IntentID] = ev.Decided
		mu.Unlock()
	})
	if _, err := w.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	digest := digestOf(`{"receipt":true}`)
	want := map[string]string{"with": digest, "without": ""}
	for id, d := range want {
		if err := w.CreateIntent(ctx, id, "P", nil, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		ev := storetest.Event(id)
		ev.Decided = &intentd.Decided{ReceiptDigest: d}
		if d != "" {
			ev.Decided.Receipt = []byte(`{"receipt":true}`)
		}
		if _, err := storetest.BeginAndFinish(ctx, w, id, "P", nil, time.Now().Add(time.Hour), ev); err != nil {
			t.Fatal(err)
		}
	}
	check := func(how string, got map[string]*intentd.Decided) {
		t.Helper()
		for id, d := range want {
			if got[id] == nil || got[id].ReceiptDigest != d || got[id].Receipt != nil {
				t.Errorf("%s: the event of %q says %+v, want the digest %q alone", how, id, got[id], d)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(followed)
		mu.Unlock()
		if n == len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	check("followed", followed)
	mu.Unlock()
	read := map[string]*intentd.Decided{}
	if err := r.Events(ctx, 0, 10, func(ev intentd.Event) error { read[ev.IntentID] = ev.Decided; return nil }); err != nil {
		t.Fatal(err)
	}
	check("read back", read)
}

// digestOf is a digest as the engine gives one: Base58 of a SHA-256.
func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base58.Encode(sum[:])
}
