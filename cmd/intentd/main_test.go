package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentd/intentd/internal/buildinfo"
	"github.com/intentd/intentd/internal/syncbuf"
)

// parseFlags reads args, with env as the whole environment, into a new Main.
func parseFlags(args []string, env map[string]string) (*Main, error) {
	m := NewMain()
	m.Stderr = &syncbuf.Buffer{}
	m.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return m, m.ParseFlags(args)
}

// parseFlagsTest is a command line and environment, and what ParseFlags makes of them:
// a check of the Config, or an error naming wantErr.
type parseFlagsTest struct {
	name    string
	args    []string
	env     map[string]string
	check   func(t *testing.T, c Config)
	wantErr string
}

// parseFlagsTests are TestParseFlags' cases.
var parseFlagsTests = []parseFlagsTest{
	{"defaults", nil, nil, func(t *testing.T, c Config) {
		if c.Listen != "127.0.0.1:8080" || c.DataDir != "./data" || c.Verify.AllowUnsigned || c.Engine.IntentTTL != 24*time.Hour ||
			c.Engine.MaxProving != 64 || c.Engine.ProvingQueue != 1024 || c.Engine.EventRetention != 1_000_000 || c.Log.Format != "text" || c.API.MaxBody != 1<<20 {
			t.Fatalf("defaults = %+v", c)
		}
	}, ""},
	{"flags", []string{"--listen", ":9000", "--allow-unsigned", "--intent-ttl", "90s", "--proving-queue", "0", "--log-format", "json"}, nil,
		func(t *testing.T, c Config) {
			if c.Listen != ":9000" || !c.Verify.AllowUnsigned || c.Engine.IntentTTL != 90*time.Second || c.Engine.ProvingQueue != 0 || c.Log.Format != "json" {
				t.Fatalf("config = %+v", c)
			}
		}, ""},
	{"environment", nil, map[string]string{
		"INTENTD_LISTEN": ":7000", "INTENTD_ALLOW_UNSIGNED": "true", "INTENTD_MAX_PROVING": "3",
		"INTENTD_EXTRACTOR_URL": "http://evidence.internal", "INTENTD_EVENT_RETENTION": "10", "INTENTD_PASSKEY_REQUIRE_UV": "true",
	}, func(t *testing.T, c Config) {
		if c.Listen != ":7000" || !c.Verify.AllowUnsigned || c.Engine.MaxProving != 3 || c.Evidence.ExtractorURL != "http://evidence.internal" || c.Engine.EventRetention != 10 ||
			!c.Verify.PasskeyRequireUV {
			t.Fatalf("config = %+v", c)
		}
	}, ""},
	{"a flag wins over its variable", []string{"--listen", ":9000", "--allow-unsigned=false"},
		map[string]string{"INTENTD_LISTEN": ":7000", "INTENTD_ALLOW_UNSIGNED": "1"}, func(t *testing.T, c Config) {
			if c.Listen != ":9000" || c.Verify.AllowUnsigned {
				t.Fatalf("config = %+v", c)
			}
		}, ""},
	{"list flag, repeated and comma lists", []string{"--passkey-top-origin", "https://a.example,https://b.example", "--passkey-top-origin", "https://c.example"}, nil,
		func(t *testing.T, c Config) {
			if want := []string{"https://a.example", "https://b.example", "https://c.example"}; !slices.Equal(c.Verify.PasskeyTopOrigins, want) {
				t.Fatalf("top origins = %q, want %q", c.Verify.PasskeyTopOrigins, want)
			}
		}, ""},
	{"list variable", nil, map[string]string{"INTENTD_PASSKEY_TOP_ORIGIN": "https://a.example, https://b.example"}, func(t *testing.T, c Config) {
		if want := []string{"https://a.example", "https://b.example"}; !slices.Equal(c.Verify.PasskeyTopOrigins, want) {
			t.Fatalf("top origins = %q, want %q", c.Verify.PasskeyTopOrigins, want)
		}
	}, ""},
	{"a list flag replaces its variable", []string{"--passkey-top-origin", "https://c.example"},
		map[string]string{"INTENTD_PASSKEY_TOP_ORIGIN": "https://a.example"}, func(t *testing.T, c Config) {
			if want := []string{"https://c.example"}; !slices.Equal(c.Verify.PasskeyTopOrigins, want) {
				t.Fatalf("top origins = %q, want %q", c.Verify.PasskeyTopOrigins, want)
			}
		}, ""},
	{"CORS origins, normalized", []string{"--cors-origin", "HTTP://LocalHost:80,https://shop.example:8443", "--cors-origin", "*"}, nil,
		func(t *testing.T, c Config) {
			if want := []string{"http://localhost", "https://shop.example:8443", "*"}; !slices.Equal(c.API.CORSOrigins, want) {
				t.Fatalf("CORS origins = %q, want %q", c.API.CORSOrigins, want)
			}
		}, ""},
	{"CORS origins variable", nil, map[string]string{"INTENTD_CORS_ORIGIN": "https://a.example, http://127.0.0.1:3000"}, func(t *testing.T, c Config) {
		if want := []string{"https://a.example", "http://127.0.0.1:3000"}; !slices.Equal(c.API.CORSOrigins, want) {
			t.Fatalf("CORS origins = %q, want %q", c.API.CORSOrigins, want)
		}
	}, ""},
	{"CORS off by default", nil, nil, func(t *testing.T, c Config) {
		if len(c.API.CORSOrigins) != 0 {
			t.Fatalf("CORS origins = %q, want none", c.API.CORSOrigins)
		}
	}, ""},
	{"CORS origin with a path", []string{"--cors-origin", "https://shop.example/app"}, nil, nil, "--cors-origin"},
	{"CORS origin without a scheme", nil, map[string]string{"INTENTD_CORS_ORIGIN": "shop.example"}, nil, "--cors-origin"},
	{"bad variable", nil, map[string]string{"INTENTD_MAX_PROVING": "many"}, nil, "INTENTD_MAX_PROVING"},
	{"bad log format", []string{"--log-format", "xml"}, nil, nil, "--log-format"},
	{"default solution limit", nil, nil, func(t *testing.T, c Config) {
		if c.API.Limits.MaxSolutionBytes != 16<<10 {
			t.Fatalf("max solution = %d, want 16384", c.API.Limits.MaxSolutionBytes)
		}
	}, ""},
	{"solution limit up to the body limit", []string{"--max-solution", "1048576"}, nil, func(t *testing.T, c Config) {
		if c.API.Limits.MaxSolutionBytes != 1<<20 {
			t.Fatalf("max solution = %d, want 1048576", c.API.Limits.MaxSolutionBytes)
		}
	}, ""},
	{"default solution limit lowered to a smaller body limit", []string{"--max-body", "2048"}, nil, func(t *testing.T, c Config) {
		if c.API.Limits.MaxSolutionBytes != 2048 {
			t.Fatalf("max solution = %d, want the body limit 2048", c.API.Limits.MaxSolutionBytes)
		}
	}, ""},
	{"solution limit over the body limit", []string{"--max-body", "2048", "--max-solution", "2049"}, nil, nil, "--max-solution 2049: want 1 to 2048"},
	{"solution limit variable over the body limit", []string{"--max-body", "2048"}, map[string]string{"INTENTD_MAX_SOLUTION": "4096"}, nil, "--max-solution 4096"},
	{"solution limit over the engine's", []string{"--max-body", "4194304", "--max-solution", "1048577"}, nil, nil, "the engine's limit, 1048576"},
	{"negative queue", []string{"--proving-queue", "-1"}, nil, nil, "--proving-queue"},
	{"no proving", []string{"--max-proving", "0"}, nil, nil, "--max-proving"},
	{"zero ttl", []string{"--intent-ttl", "0s"}, nil, nil, "--intent-ttl"},
	{"ttl past a century", []string{"--intent-ttl", "876001h"}, nil, nil, "--intent-ttl"},
	{"nats store", []string{"--store", "nats://a:4222,nats://b:4222", "--nats-prefix", "shop", "--nats-replicas", "3"},
		map[string]string{"INTENTD_NATS_TOKEN": "s3cret"}, func(t *testing.T, c Config) {
			if c.Store != "nats://a:4222,nats://b:4222" || c.Nats.Prefix != "shop" || c.Nats.Replicas != 3 || c.Nats.Token != "s3cret" {
				t.Fatalf("config = %+v", c)
			}
		}, ""},
	{"embedded nats from the environment", nil, map[string]string{"INTENTD_NATS_EMBED": "true"}, func(t *testing.T, c Config) {
		if !c.Nats.Embed || c.Store != "pebble" {
			t.Fatalf("config = %+v", c)
		}
	}, ""},
	{"bad store", []string{"--store", "redis://x"}, nil, nil, "--store"},
	{"two nats", []string{"--store", "nats://a:4222", "--nats-embed"}, nil, nil, "--nats-embed"},
	{"embed config alone", []string{"--nats-embed-config", "n.conf"}, nil, nil, "--nats-embed-config"},
	{"negative replicas", []string{"--store", "nats://a:4222", "--nats-replicas", "-1"}, nil, nil, "--nats-replicas"},
	{"follow window by default", []string{"--store", "nats://a:4222"}, nil, func(t *testing.T, c Config) {
		if c.Nats.FollowWindow != 20*time.Millisecond {
			t.Fatalf("follow window = %v, want 20ms", c.Nats.FollowWindow)
		}
	}, ""},
	{"follow window from the environment", []string{"--store", "nats://a:4222"}, map[string]string{"INTENTD_NATS_FOLLOW_WINDOW": "0s"}, func(t *testing.T, c Config) {
		if c.Nats.FollowWindow != 0 {
			t.Fatalf("follow window = %v, want 0", c.Nats.FollowWindow)
		}
	}, ""},
	{"follow window past its bound", []string{"--store", "nats://a:4222", "--nats-follow-window", "501ms"}, nil, nil, "--nats-follow-window 501ms: want 0 to 500ms"},
	{"negative follow window", []string{"--store", "nats://a:4222", "--nats-follow-window", "-1ms"}, nil, nil, "--nats-follow-window -1ms"},
	{"two nats credentials", []string{"--store", "nats://a:4222", "--nats-nkey", "intentd.nk"}, map[string]string{"INTENTD_NATS_TOKEN": "s3cret"},
		nil, "--nats-token and --nats-nkey: give one of them"},
	{"nats nkey", []string{"--store", "nats://a:4222", "--nats-nkey", "intentd.nk"}, nil, func(t *testing.T, c Config) {
		if c.Nats.NKey != "intentd.nk" {
			t.Fatalf("config = %+v", c)
		}
	}, ""},
	{"unknown flag", []string{"--color"}, nil, nil, "color"},
	{"stray argument", []string{"serve"}, nil, nil, "serve"},
}

// TestParseFlags checks the flags, their environment variables and which wins.
func TestParseFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range parseFlagsTests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseFlags(tt.args, tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, m.Config)
		})
	}
	t.Run("help", func(t *testing.T) {
		m := NewMain()
		out := &syncbuf.Buffer{}
		m.Stderr = out
		if err := m.ParseFlags([]string{"-h"}); err != flag.ErrHelp || !strings.Contains(out.String(), "INTENTD_") {
			t.Fatalf("-h: %v; usage:\n%s", err, out)
		}
	})
	t.Run("version", func(t *testing.T) {
		m := NewMain()
		out := &syncbuf.Buffer{}
		m.Stdout, m.Stderr = out, &syncbuf.Buffer{}
		if err := m.ParseFlags([]string{"--version"}); err != flag.ErrHelp || !strings.HasPrefix(out.String(), "intentd ") || !strings.Contains(out.String(), runtime.Version()) {
			t.Fatalf("--version: %v; printed %q, want intentd, its version and %s", err, out, runtime.Version())
		}
	})
	t.Run("INTENTD_VERSION is not --version", func(t *testing.T) {
		// A deployment may set INTENTD_VERSION for its own use: the service starts.
		m := NewMain()
		out := &syncbuf.Buffer{}
		m.Stdout, m.Stderr = out, &syncbuf.Buffer{}
		m.LookupEnv = func(name string) (string, bool) {
			if name == "INTENTD_VERSION" {
				return "v1.2.3", true
			}
			return "", false
		}
		if err := m.ParseFlags(nil); err != nil || out.String() != "" {
			t.Fatalf("with INTENTD_VERSION set: %v, printed %q; want a start's flags", err, out)
		}
	})
}

// evidenceService is an evidence service for the http extractor that holds every
// request until released.
type evidenceService struct {
	*httptest.Server
	started chan string
	release chan struct{}
	once    sync.Once
}

func newEvidenceService(t *testing.T) *evidenceService {
	es := &evidenceService{started: make(chan string, 64), release: make(chan struct{})}
	es.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Solution string `json:"solution"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		es.started <- req.Solution
		select {
		case <-es.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"category":"t-shirt","size":"M","color":"navy","brand":"Northwind","price_cents":1999,"shipping_cents":499,"in_stock":true}`))
	}))
	t.Cleanup(func() { es.free(); es.Close() })
	return es
}

func (es *evidenceService) free() { es.once.Do(func() { close(es.release) }) }

// TestCapacity fills the proving slots and the queue through the http extractor: the
// next proposal is a 503 with Retry-After that changes nothing, and is accepted once
// a slot frees.
func TestCapacity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		queue    string
		accepted int // proposals accepted before the 503: one proving, the rest queued
	}{
		{"0", 1},
		{"2", 3},
	}
	for _, tt := range tests {
		t.Run("queue "+tt.queue, func(t *testing.T) {
			es := newEvidenceService(t)
			s := startServer(t, []string{"--extractor-url", es.URL, "--max-proving", "1", "--proving-queue", tt.queue})
			var ids []string
			for range tt.accepted + 1 {
				ids = append(ids, s.submit())
			}
			for i, id := range ids[:tt.accepted] {
				if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
					t.Fatalf("proposal %d: %s", i, r)
				}
			}
			<-es.started
			refused := ids[tt.accepted]
			r := s.propose(refused, solutionPasses)
			if code, _ := r.errorBody(t); r.status != http.StatusServiceUnavailable || code != "capacity_exceeded" {
				t.Fatalf("proposal past capacity: %s, want 503 capacity_exceeded", r)
			}
			if ra := r.header.Get("Retry-After"); ra != "1" {
				t.Fatalf("Retry-After = %q, want 1", ra)
			}
			if st := s.status(refused); st["status"] != "open" {
				t.Fatalf("a refused proposal left the intent %v", st)
			}
			es.free()
			for _, id := range ids[:tt.accepted] {
				s.waitStatus(id, "success")
			}
			if r := s.propose(refused, solutionPasses); r.status != http.StatusOK {
				t.Fatalf("proposal after capacity freed: %s", r)
			}
			s.waitStatus(refused, "success")
		})
	}
}

// TestCatalogReload serves a catalog file, and reads it again on Reload (SIGHUP): a
// solution added to the file is found afterwards; a broken file keeps the old one.
func TestCatalogReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "catalog.json")
	entry := `{"category":"t-shirt","size":"M","color":"navy","brand":"Northwind","price_cents":1999,"shipping_cents":499,"in_stock":true}`
	write := func(content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"sku:A": ` + entry + `}`)
	s := startServer(t, []string{"--catalog", path})

	first := s.submit()
	s.propose(first, "sku:B")
	if st := s.waitStatus(first, "failure"); st["failure_kind"] != "extraction" {
		t.Fatalf("a solution missing from the catalog: %v", st)
	}
	write(`{"sku:A": ` + entry + `, "sku:B": ` + entry + `}`)
	s.m.Reload()
	second := s.submit()
	s.propose(second, "sku:B")
	s.waitStatus(second, "success")

	write(`{"sku:A": `)
	s.m.Reload()
	if !strings.Contains(s.logs.String(), "catalog reload failed") {
		t.Fatal("a broken catalog was not logged")
	}
	third := s.submit()
	s.propose(third, "sku:B")
	s.waitStatus(third, "success")
}

// TestInfo checks GET /info against the flags.
func TestInfo(t *testing.T) {
	t.Parallel()
	s := startServer(t, []string{"--allow-unsigned", "--intent-ttl", "2h", "--max-body", "2048", "--event-retention", "99"})
	r := s.do("GET", "/info", "", nil)
	var info map[string]any
	if err := json.Unmarshal(r.body, &info); err != nil || r.status != 200 {
		t.Fatalf("GET /info: %s", r)
	}
	want := map[string]any{"api_version": "0.10.0", "unsigned_permitted": true, "intent_ttl_seconds": 7200.0,
		"max_body_bytes": 2048.0, "max_solution_bytes": 2048.0, "event_retention": 99.0}
	for k, v := range want {
		if info[k] != v {
			t.Errorf("info %s = %v, want %v", k, info[k], v)
		}
	}
	// The build that answers, as intentd --version names it; and the same in /metrics.
	build := buildinfo.Read()
	if info["version"] != build.Version {
		t.Errorf("info version = %v, want %s", info["version"], build.Version)
	}
	m := s.do("GET", "/metrics", "", nil)
	if want := fmt.Sprintf(`intentd_build_info{go_version=%q,revision=%q,version=%q} 1`, build.GoVersion, build.Revision, build.Version); !strings.Contains(string(m.body), want) {
		t.Errorf("/metrics has no %s", want)
	}
}
