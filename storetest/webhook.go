package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/intentd/intentd"
)

// testWebhooks holds a store to intentd.WebhookStore: a record reads back as written;
// an id is created once; a write names the revision it read and one naming another is
// refused, so that of members racing to take an endpoint's lease exactly one does; a
// deleted endpoint reads as not found, is not listed, and refuses the writes of a
// member still delivering it; and everything survives a reopen.
func testWebhooks(t *testing.T, open func(*testing.T) Store) {
	s := open(t)
	ws, ok := s.(intentd.WebhookStore)
	if !ok {
		s.Close()
		t.Skip("the store keeps no webhook endpoints")
	}
	defer func() { s.Close() }()

	list := func(t *testing.T) map[string]string {
		t.Helper()
		got := map[string]string{}
		err := ws.Webhooks(ctx, func(id string, record []byte, rev uint64) error {
			if rev == 0 {
				t.Errorf("endpoint %s listed at revision 0", id)
			}
			got[id] = string(record)
			return nil
		})
		if err != nil {
			t.Fatalf("Webhooks: %v", err)
		}
		return got
	}
	revs := map[string]uint64{}
	t.Run("create, read and list", func(t *testing.T) {
		for _, id := range []string{"w1", "w2", "w3"} {
			if err := ws.CreateWebhook(ctx, id, []byte("record "+id)); err != nil {
				t.Fatalf("CreateWebhook(%s): %v", id, err)
			}
			b, rev, err := ws.Webhook(ctx, id)
			if err != nil || string(b) != "record "+id || rev == 0 {
				t.Fatalf("Webhook(%s) = %q, %d, %v; want the record at a revision above 0", id, b, rev, err)
			}
			revs[id] = rev
		}
		want := map[string]string{"w1": "record w1", "w2": "record w2", "w3": "record w3"}
		if got := list(t); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Webhooks listed %v, want %v", got, want)
		}
		if err := ws.CreateWebhook(ctx, "w1", []byte("again")); !errors.Is(err, intentd.ErrExists) {
			t.Fatalf("CreateWebhook of a taken id: %v, want ErrExists", err)
		}
		if _, _, err := ws.Webhook(ctx, "nope"); !errors.Is(err, intentd.ErrNotFound) {
			t.Fatalf("Webhook of an id never created: %v, want ErrNotFound", err)
		}
	})

	t.Run("updates fenced on the revision", func(t *testing.T) {
		next, err := ws.UpdateWebhook(ctx, "w1", []byte("moved"), revs["w1"])
		if err != nil || next <= revs["w1"] {
			t.Fatalf("UpdateWebhook from the revision read = %d, %v; want a revision above %d", next, err, revs["w1"])
		}
		if _, err := ws.UpdateWebhook(ctx, "w1", []byte("stale"), revs["w1"]); !errors.Is(err, intentd.ErrStale) {
			t.Fatalf("UpdateWebhook from a revision replaced: %v, want ErrStale", err)
		}
		if _, err := ws.UpdateWebhook(ctx, "nope", []byte("x"), 1); !errors.Is(err, intentd.ErrStale) {
			t.Fatalf("UpdateWebhook of an endpoint not stored: %v, want ErrStale", err)
		}
		b, rev, err := ws.Webhook(ctx, "w1")
		if err != nil || string(b) != "moved" || rev != next {
			t.Fatalf("Webhook(w1) = %q, %d, %v; want \"moved\" at %d", b, rev, err, next)
		}
		revs["w1"] = next
	})

	t.Run("racing writers", func(t *testing.T) {
		const writers = 8
		var wg sync.WaitGroup
		won := make(chan int, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := ws.UpdateWebhook(ctx, "w2", fmt.Appendf(nil, "lease %d", i), revs["w2"]); err == nil {
					won <- i
				} else if !errors.Is(err, intentd.ErrStale) {
					t.Errorf("writer %d: %v, want success or ErrStale", i, err)
				}
			}()
		}
		wg.Wait()
		close(won)
		var winners []int
		for i := range won {
			winners = append(winners, i)
		}
		if len(winners) != 1 {
			t.Fatalf("%d writers from one revision succeeded, want exactly 1", len(winners))
		}
		b, rev, err := ws.Webhook(ctx, "w2")
		if err != nil || !bytes.Equal(b, fmt.Appendf(nil, "lease %d", winners[0])) {
			t.Fatalf("Webhook(w2) = %q, %v; want the winner's record", b, err)
		}
		revs["w2"] = rev
	})

	t.Run("delete", func(t *testing.T) {
		if err := ws.DeleteWebhook(ctx, "w3"); err != nil {
			t.Fatalf("DeleteWebhook: %v", err)
		}
		if _, _, err := ws.Webhook(ctx, "w3"); !errors.Is(err, intentd.ErrNotFound) {
			t.Fatalf("Webhook of a deleted endpoint: %v, want ErrNotFound", err)
		}
		if _, err := ws.UpdateWebhook(ctx, "w3", []byte("a deliverer's write"), revs["w3"]); !errors.Is(err, intentd.ErrStale) {
			t.Fatalf("UpdateWebhook of a deleted endpoint: %v, want ErrStale", err)
		}
		if err := ws.DeleteWebhook(ctx, "w3"); !errors.Is(err, intentd.ErrNotFound) {
			t.Fatalf("DeleteWebhook again: %v, want ErrNotFound", err)
		}
		if _, ok := list(t)["w3"]; ok {
			t.Fatal("a deleted endpoint is listed")
		}
		delete(revs, "w3")
	})

	t.Run("reopen", func(t *testing.T) {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open(t)
		ws = s.(intentd.WebhookStore)
		got := list(t)
		if len(got) != len(revs) {
			t.Fatalf("after a reopen %d endpoints listed, want %d: %v", len(got), len(revs), got)
		}
		for id, rev := range revs {
			if _, r, err := ws.Webhook(ctx, id); err != nil || r != rev {
				t.Errorf("endpoint %s after a reopen: revision %d, %v; want %d", id, r, err, rev)
			}
		}
	})

	t.Run("closed", func(t *testing.T) {
		s.Close()
		if err := ws.CreateWebhook(ctx, "w9", nil); !errors.Is(err, intentd.ErrStoreClosed) {
			t.Errorf("CreateWebhook after Close: %v, want ErrStoreClosed", err)
		}
		if _, _, err := ws.Webhook(ctx, "w1"); !errors.Is(err, intentd.ErrStoreClosed) {
			t.Errorf("Webhook after Close: %v, want ErrStoreClosed", err)
		}
	})
}
