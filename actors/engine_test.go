package actors

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/natsstore"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/storetest"
)

const testPolicy = `
name test_tshirt
parameters { size: string  max_price_cents: int }
evidence { size: string  price_cents: int }
requires {
  evidence.size == parameters.size;
  evidence.price_cents <= parameters.max_price_cents;
}
`

// fakeExtractor answers from a table of solutions. A solution starting with "block:"
// waits until release is closed or the context ends; "panic:" panics; "fail:" fails.
type fakeExtractor struct {
	mu      sync.Mutex
	catalog map[string]evidence.Evidence
	release chan struct{}
	calls   map[string]int
	started chan string
}

func newFakeExtractor() *fakeExtractor {
	return &fakeExtractor{
		catalog: map[string]evidence.Evidence{
			"good":        {"size": json.Number("40"), "price_cents": json.Number("1999")},
			"M-cheap":     {"size": "M", "price_cents": json.Number("1999")},
			"M-dear":      {"size": "M", "price_cents": json.Number("9999")},
			"L-dear":      {"size": "L", "price_cents": json.Number("9999")},
			"M-no-size":   {"price_cents": json.Number("100")},
			"L-no-price":  {"size": "L"},
			"no-evidence": {},
		},
		release: make(chan struct{}),
		calls:   make(map[string]int),
		started: make(chan string, 1024),
	}
}

func (f *fakeExtractor) Extract(ctx context.Context, req evidence.Request) (evidence.Evidence, error) {
	f.mu.Lock()
	f.calls[req.Solution]++
	f.mu.Unlock()
	select {
	case f.started <- req.Solution:
	default: // nobody is counting starts; a long run must not block on them
	}
	sol := req.Solution
	switch {
	case strings.HasPrefix(sol, "block:"):
		select {
		case <-f.release:
			sol = strings.TrimPrefix(sol, "block:")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case strings.HasPrefix(sol, "panic:"):
		panic("extractor bug")
	case strings.HasPrefix(sol, "fail:"):
		return nil, errors.New("the shop answered 404")
	}
	ev, ok := f.catalog[sol]
	if !ok {
		return nil, fmt.Errorf("solution %q is not in the catalog", sol)
	}
	return ev, nil
}

type harness struct {
	t         *testing.T
	openStore func(t *testing.T) storetest.Store
	store     storetest.Store
	e         *Engine
	ext       *fakeExtractor
	cfg       Config
	key       ed25519.PrivateKey
	policy    string
}

// submitRaw submits the JSON of an intent as the HTTP layer does: decoded, then
// canonicalized, then handed to the engine.
func submitRaw(ctx context.Context, e *Engine, raw []byte, auth crypto.Authorship) error {
	in, err := intentd.DecodeIntent(raw)
	if err != nil {
		return err
	}
	sub, err := intentd.NewSubmission(in, raw, auth)
	if err != nil {
		return err
	}
	return e.SubmitIntent(ctx, sub)
}

// stores are the stores that the tests of what the engine asks of a store run on: each
// makes a fresh backing place and returns how to open a store on it.
var stores = []struct {
	name    string
	backend storetest.Backend
}{
	{"pebble", func(*testing.T) func(*testing.T) storetest.Store {
		fs := persistence.NewMemFS()
		return func(t *testing.T) storetest.Store {
			s, err := persistence.Open("db", persistence.Options{FS: fs})
			if err != nil {
				t.Fatalf("open store: %v", err)
			}
			return s
		}
	}},
	{"nats", func(t *testing.T) func(*testing.T) storetest.Store {
		srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
		return func(t *testing.T) storetest.Store {
			s, err := natsstore.Open(context.Background(), natsstore.Options{URLs: []string{srv.URL()}})
			if err != nil {
				t.Fatalf("open store: %v", err)
			}
			return s
		}
	}},
}

// eachStore runs a test once on every store, as a subtest named for it.
func eachStore(t *testing.T, run func(t *testing.T, backend storetest.Backend)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { run(t, s.backend) })
	}
}

func newHarness(t *testing.T, tweak func(*Config)) *harness {
	t.Helper()
	return newHarnessOn(t, stores[0].backend, tweak)
}

// newHarnessOn opens an engine on a store of the given backend.
func newHarnessOn(t *testing.T, backend storetest.Backend, tweak func(*Config)) *harness {
	t.Helper()
	return newHarnessWith(t, backend(t), tweak)
}

// newHarnessWith opens an engine on a store opened by openStore: two harnesses given
// one opener of a shared store are two nodes.
func newHarnessWith(t *testing.T, openStore func(*testing.T) storetest.Store, tweak func(*Config)) *harness {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(nil)
	h := &harness{t: t, openStore: openStore, ext: newFakeExtractor(), key: key}
	h.cfg = DefaultConfig()
	h.cfg.ExpiryInterval = 10 * time.Millisecond
	if tweak != nil {
		tweak(&h.cfg)
	}
	h.open()
	t.Cleanup(h.close)
	id, err := h.e.PutPolicy(context.Background(), testPolicy)
	if err != nil {
		t.Fatalf("PutPolicy: %v", err)
	}
	h.policy = id
	return h
}

func (h *harness) open() {
	h.t.Helper()
	store := h.openStore(h.t)
	cfg := h.cfg
	cfg.Store = store
	cfg.Extractor = h.ext
	e, err := Open(cfg)
	if err != nil {
		h.t.Fatalf("Open: %v", err)
	}
	h.store, h.e = store, e
	<-e.Ready()
}

func (h *harness) close() {
	if h.e != nil {
		h.e.Close()
		h.store.Close()
		h.e, h.store = nil, nil
	}
}

func (h *harness) restart() {
	h.close()
	h.open()
}

// intentJSON builds an intent for the test policy.
func (h *harness) intentJSON(id, size string, max int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":%q},"max_price_cents":{"Int":%d}}}}`,
		id, h.policy, size, max)
}

func (h *harness) submit(size string, max int) string {
	h.t.Helper()
	id := uuid.NewString()
	h.submitID(id, size, max)
	return id
}

// submitID submits an intent of id, signed by the harness's key.
func (h *harness) submitID(id, size string, max int) {
	h.t.Helper()
	raw := h.intentJSON(id, size, max)
	auth, err := crypto.SignEd25519(h.key, raw)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := submitRaw(context.Background(), h.e, raw, auth); err != nil {
		h.t.Fatalf("SubmitIntent: %v", err)
	}
}

func (h *harness) status(id string) intentd.Status {
	h.t.Helper()
	s, err := h.e.Status(context.Background(), id)
	if err != nil {
		h.t.Fatalf("Status(%s): %v", id, err)
	}
	return s
}

// waitState polls until the intent reaches state.
func (h *harness) waitState(id string, state intentd.State) intentd.Status {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := h.status(id)
		if s.State == state {
			return s
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("intent %s is %s, want %s", id, s.State, state)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitNoActors waits until no intent actor is live, and fails the test with why and the
// number still live once deadline has passed.
func (h *harness) waitNoActors(deadline time.Time, why string) {
	h.t.Helper()
	for h.e.registry.live() > 0 {
		if time.Now().After(deadline) {
			h.t.Fatalf("%d actors still live %s", h.e.registry.live(), why)
		}
		time.Sleep(time.Millisecond)
	}
}

// events reads every retained event (and live ones until quiet) from a fresh subscription.
func (h *harness) events(from uint64, want int) []intentd.Event {
	h.t.Helper()
	sub, err := h.e.Subscribe(context.Background(), from, intentd.Filter{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer sub.Close()
	var out []intentd.Event
	for len(out) < want {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ev, err := sub.Next(ctx)
		cancel()
		if err != nil {
			h.t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, ev)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if ev, err := sub.Next(ctx); err == nil {
		h.t.Fatalf("unexpected extra event %d: %s", ev.ID, ev.Data)
	}
	return out
}

// harnessCase is a row of a table test: run drives an engine opened with cfg, on a
// harness of its own.
type harnessCase struct {
	name string
	cfg  func(*Config)
	run  func(t *testing.T, h *harness)
}

func wantCode(t *testing.T, err error, kind intentd.Kind, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s/%s", kind, code)
	}
	if intentd.ErrorKind(err) != kind || intentd.ErrorCode(err) != code {
		t.Fatalf("err = %v (kind %s, code %s), want %s/%s", err, intentd.ErrorKind(err), intentd.ErrorCode(err), kind, code)
	}
}

func proposeTo(h *harness, id, solution string) error {
	return h.e.Propose(context.Background(), id, intentd.Proposal{Solution: solution}, nil)
}

// TestConfigRefused checks that Open refuses a configuration it cannot run with, naming
// what is wrong, rather than reading a zero as some default: the defaults are
// DefaultConfig's alone.
func TestConfigRefused(t *testing.T) {
	store, err := persistence.Open("db", persistence.Options{FS: persistence.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, tc := range []struct {
		name  string
		tweak func(*Config)
		want  string
	}{
		{"no store", func(c *Config) { c.Store = nil }, "Store and Config.Extractor are required"},
		{"zero proving slots", func(c *Config) { c.MaxProving = 0 }, "MaxProving 0"},
		{"negative queue", func(c *Config) { c.ProvingQueue = -1 }, "ProvingQueue -1"},
		{"zero ttl", func(c *Config) { c.IntentTTL = 0 }, "IntentTTL 0s"},
		{"no solution limit", func(c *Config) { c.MaxSolutionBytes = 0 }, "MaxSolutionBytes 0"},
		{"solution limit over the engine's", func(c *Config) { c.MaxSolutionBytes = intentd.MaxSolutionBytes + 1 }, "want 1 to 1048576"},
		{"zero config", func(c *Config) { *c = Config{Store: store, Extractor: newFakeExtractor()} }, "start from DefaultConfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Store, cfg.Extractor = store, newFakeExtractor()
			tc.tweak(&cfg)
			e, err := Open(cfg)
			if err == nil {
				e.Close()
				t.Fatal("Open accepted it")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
