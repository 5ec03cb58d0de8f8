package natsstore

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// storeOnRestartable opens a store on an embedded server of its own, which the test
// may shut down; again starts it once more on the same port and files.
func storeOnRestartable(t *testing.T) (s *Store, srv *Embedded, again func()) {
	t.Helper()
	dir := t.TempDir()
	srv, err := Embed(EmbedOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL())
	port, _ := strconv.Atoi(u.Port())
	s = open(t, srv.URL())
	t.Cleanup(func() { s.Close() })
	return s, srv, func() {
		t.Helper()
		back, err := Embed(EmbedOptions{Dir: dir, Port: port})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(back.Shutdown)
	}
}

// TestServerRestart stops the NATS server under an open store: calls fail at once with a
// busy error to retry, and once the server is back on the same port and files, the store
// works again by itself, its event sink included.
func TestServerRestart(t *testing.T) {
	ctx := context.Background()
	s, srv, again := storeOnRestartable(t)
	var mu sync.Mutex
	var heard []string
	s.SetEventSink(func(e intentd.Event) {
		mu.Lock()
		heard = append(heard, e.IntentID)
		mu.Unlock()
	})
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIntent(ctx, "a", "P", []byte("o"), time.Now()); err != nil {
		t.Fatal(err)
	}

	srv.Shutdown()
	start := time.Now()
	err := s.CreateIntent(ctx, "b", "P", []byte("o"), time.Now())
	var ie *intentd.Error
	if !errors.As(err, &ie) || ie.Kind != intentd.KindBusy || ie.Code != intentd.CodeStoreUnavailable {
		t.Fatalf("create with the server down: %v, want a busy %s error", err, intentd.CodeStoreUnavailable)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("create with the server down took %v to fail", d)
	}

	again()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := s.CreateIntent(ctx, "b", "P", []byte("o"), time.Now())
		if err == nil {
			break
		}
		if !errors.As(err, &ie) || ie.Code != intentd.CodeStoreUnavailable || time.Now().After(deadline) {
			t.Fatalf("create after the server came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := storetest.BeginAndFinish(ctx, s, id, "P", []byte("t"), time.Now(), storetest.Event(id)); err != nil {
			t.Fatalf("finish %s after the server came back: %v", id, err)
		}
	}
	for {
		mu.Lock()
		n := len(heard)
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink heard %v after the server came back, want a and b", heard)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ids, err := s.Processing(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("processing = %v, %v", ids, err)
	}
}

// TestCallEndsWhenTheConnectionDrops: a call under way when the connection to the NATS
// server drops ends at once, with the drop as its cause, rather than at its time-out;
// once the server is back, the next call starts with a context of its own, not ended
// by the drop before it.
func TestCallEndsWhenTheConnectionDrops(t *testing.T) {
	s, srv, again := storeOnRestartable(t)

	ctx, end, err := s.begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ended, endedBefore, _ := s.begin(context.Background())
	endedBefore() // a call that ended before the drop is not touched by it
	srv.Shutdown()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the call under way did not end within 5 s of the drop")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, errDisconnected) {
		t.Fatalf("the call ended with %v, want %v", cause, errDisconnected)
	}
	if cause := context.Cause(ended); !errors.Is(cause, context.Canceled) || errors.Is(cause, errDisconnected) {
		t.Fatalf("the call ended before the drop has cause %v, want context.Canceled", cause)
	}
	end()
	if _, _, err := s.begin(context.Background()); intentd.ErrorCode(err) != intentd.CodeStoreUnavailable {
		t.Fatalf("a call while the server is down: %v, want %s", err, intentd.CodeStoreUnavailable)
	}

	again()
	var next context.Context
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, endNext, err := s.begin(context.Background())
		if err == nil {
			next = c
			defer endNext()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a call 15 s after the server came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-next.Done():
		t.Fatalf("the call after the server came back is ended: %v", context.Cause(next))
	case <-time.After(200 * time.Millisecond):
	}
}
