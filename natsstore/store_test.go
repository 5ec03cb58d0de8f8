package natsstore

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd/storetest"
)

// embed starts a NATS server with JetStream in a temporary folder, stopped when the test
// ends.
func embed(t testing.TB) *Embedded {
	t.Helper()
	srv, err := Embed(EmbedOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

func open(t testing.TB, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{URLs: []string{url}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func(*testing.T) storetest.Store {
		srv := embed(t)
		return func(t *testing.T) storetest.Store { return open(t, srv.URL()) }
	})
}

// TestOpenRefusesAnotherLayout finds a stream of the store's name that would lose
// records, and names what differs.
func TestOpenRefusesAnotherLayout(t *testing.T) {
	srv := embed(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: "INTENTD", Subjects: []string{"intentd.>"}, MaxAge: time.Hour,
	}); err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), Options{URLs: []string{srv.URL()}})
	if err == nil || !strings.Contains(err.Error(), "another layout") || !strings.Contains(err.Error(), "allow_atomic") ||
		!strings.Contains(err.Error(), "max_age") {
		t.Fatalf("Open on a stream of another layout: %v", err)
	}
}

// TestOpenUnreachable fails at once with the URL in a one-line error.
func TestOpenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, err = Open(context.Background(), Options{URLs: []string{url}})
	if err == nil || !strings.Contains(err.Error(), url) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Open of an unreachable server: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Open took %v to fail", d)
	}
}

// TestPruneAllThenCount prunes everything by count, then by count again after new events:
// the event kept only for its id is never counted as retained.
func TestPruneAllThenCount(t *testing.T) {
	ctx := context.Background()
	s := open(t, embed(t).URL())
	defer s.Close()
	s.PutPolicy(ctx, "P", []byte{1}, nil)
	finish := func(id string) uint64 {
		if err := s.CreateIntent(ctx, id, "P", nil, time.Now()); err != nil {
			t.Fatal(err)
		}
		ev, err := s.Finish(ctx, id, "P", nil, time.Now(), storetest.Event(id))
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	finish("a")
	last := finish("b")
	if n, err := s.PruneEvents(ctx, 0, time.Time{}); err != nil || n != 2 {
		t.Fatalf("prune all = %d, %v; want 2", n, err)
	}
	if n, err := s.PruneEvents(ctx, 0, time.Time{}); err != nil || n != 0 {
		t.Fatalf("prune of nothing = %d, %v; want 0", n, err)
	}
	c := finish("c")
	d := finish("d")
	if n, err := s.PruneEvents(ctx, 1, time.Time{}); err != nil || n != 1 {
		t.Fatalf("prune to 1 = %d, %v; want 1", n, err)
	}
	if first, l, _ := s.EventBounds(ctx); first != d || l != d || c <= last {
		t.Fatalf("bounds = %d..%d, want %d..%d", first, l, d, d)
	}
}
