// Command intentd is the intent service: it stores policies and intents in a Pebble
// store, proves proposals against their policy, and serves the HTTP API and the event
// stream. Flags are listed by `intentd -h` and in docs/operating.md; each can also be
// set by an environment variable INTENTD_<NAME>, for example INTENTD_LISTEN.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/cluster/clustertls"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/natsstore"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/tlog"
	"github.com/intentd/intentd/webhook"
	"github.com/prometheus/client_golang/prometheus"
)

func main() {
	// SIGHUP is taken first: its default ends the process, and a reload sent while
	// intentd starts (systemctl reload right after start) must wait for the start.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	if len(os.Args) > 1 && os.Args[1] == "restore" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := runRestore(ctx, os.Args[2:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	m := NewMain()
	if err := m.ParseFlags(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "intentd:", err)
		if errors.Is(err, errUnhealthy) {
			os.Exit(1) // --healthcheck: the server did not answer 200
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "intentd:", err)
		m.Close()
		os.Exit(1)
	}

	exit := 0
	for done := false; !done; {
		select {
		case <-hup:
			m.Reload()
		case <-m.Done():
			m.logger.Error("the server stopped serving", "err", m.serveErr)
			done = true
		case <-m.Fenced():
			if err := m.Rejoin(ctx); err != nil {
				if !errors.Is(err, errFenced) && ctx.Err() == nil {
					m.logger.Error("rejoin the cluster", "err", err)
				}
				if ctx.Err() == nil {
					exit = 1
				}
				done = true
			}
		case <-ctx.Done():
			done = true
		}
	}
	stop() // a second signal now kills at once
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "intentd:", err)
		os.Exit(1)
	}
	os.Exit(exit)
}

// Main is the program: ParseFlags reads the settings, Run opens the store and the
// engine and starts serving, Close shuts down in order. Tests run the whole server
// through it on port 0.
type Main struct {
	Config Config
	// HTTP holds the server options that have no flag; tests shorten the heartbeat
	// and the time-outs here before Run.
	HTTP intenthttp.Options
	// Stderr receives the logs and the start-up banner; os.Stderr by default.
	Stderr io.Writer
	// Stdout receives what --version prints; os.Stdout by default.
	Stdout io.Writer
	// LookupEnv reads the environment; os.LookupEnv by default.
	LookupEnv func(string) (string, bool)

	// tuneEngine lets tests set engine options that have no flag.
	tuneEngine func(*actors.Config)
	// tracerProvider makes the spans of the engine and the HTTP server: the one
	// openTracing made for --otlp-endpoint, or a test's; nil: otel's global no-op.
	// traces is the one openTracing made, which Close shuts down.
	tracerProvider trace.TracerProvider
	traces         *sdktrace.TracerProvider

	logger  *slog.Logger
	catalog *evidence.Catalog
	store   storeCloser
	pebble  *persistence.Store // the store when it is Pebble: its fsync metric
	nats    *natsstore.Store   // the store when it is NATS: cluster mode's membership uses its connection
	// fenced is closed when this node's current incarnation was dropped from its
	// cluster (newProvider makes one per incarnation).
	fencedMu sync.Mutex
	fenced   chan struct{}
	// peersRefused counts the cluster peers this node refused because they speak no
	// version of the cluster protocol it speaks, over every incarnation.
	peersRefused atomic.Uint64
	// clusterTLSConfig is the members' TLS material, read again on SIGHUP and by a
	// watch that stopTLSWatch ends and waits for.
	clusterTLSConfig *clustertls.Config
	stopTLSWatch     func()
	// apiTLS is the HTTP API's TLS material (--tls-*), read again on SIGHUP and by a
	// watch that stopAPITLSWatch ends and waits for; nil: plain HTTP.
	apiTLS          *intenthttp.TLS
	stopAPITLSWatch func()
	// tlsWatchEvery is how often the TLS files are looked at; tlsWatchInterval when 0.
	// Tests shorten it.
	tlsWatchEvery time.Duration
	// digest changes with every write to the store, whichever it is: for the tests
	// that check a refused request stored nothing.
	digest  func() ([32]byte, error)
	natsSrv *natsstore.Embedded
	engine  *actors.Engine
	// tlog is the transparency log in tlogDir, followed by a goroutine that stopTlog
	// ends.
	tlog     *tlog.Log
	tlogDir  string
	stopTlog context.CancelFunc
	tlogDone chan struct{}
	// webhooks delivers outcomes to the registered endpoints, until stopWebhooks.
	webhooks     *webhook.Service
	stopWebhooks func()
	server       *intenthttp.Server
	ln           net.Listener
	pprof        *http.Server
	// cmdline is the command line /debug/pprof/cmdline shows, redacted; nil: os.Args.
	// Tests set their own, since the test binary's is not intentd's.
	cmdline []string
	// cmdlineSecrets are the secret flags given on the command line with the secret
	// itself, not by file: Run warns of each.
	cmdlineSecrets []string
	logw           *intenthttp.LogWriter // nil: logs go straight to Stderr
	// served is closed when Serve returns, with serveErr set before.
	served   chan struct{}
	serveErr error
	closeMu  sync.Mutex
	closed   bool
}

// NewMain returns a Main with the defaults.
func NewMain() *Main {
	return &Main{Stderr: os.Stderr, Stdout: os.Stdout, LookupEnv: os.LookupEnv}
}

// Run opens the store and the engine, waits for start-up recovery, and starts serving.
// It returns once the server listens; Done reports when serving stops, and Close shuts
// everything down. On an error Close undoes what Run did.
func (m *Main) Run(ctx context.Context) error {
	if err := m.openLogger(); err != nil {
		return err
	}
	tokens, extractor, err := m.readInputs()
	if err != nil {
		return err
	}
	if err := m.openTracing(ctx); err != nil {
		return err
	}
	if err := m.openStore(ctx); err != nil {
		return err
	}
	key, err := m.signingKey()
	if err != nil {
		return err
	}
	if m.Config.Cluster.Bind != "" {
		if err := m.checkClusterKey(ctx, key.ID()); err != nil {
			return err
		}
	}
	if m.Config.Tlog.Enabled {
		// Before the engine, which signs receipts as its start-up recovery proves
		// again: a key the log shows to be another than the one that signed it stops
		// the start before anything is signed with it.
		if err := m.openTlog(key); err != nil {
			return err
		}
	}
	metrics, err := m.newMetrics()
	if err != nil {
		return err
	}
	if err := m.openEngine(ctx, key, extractor, metrics); err != nil {
		return err
	}
	if err := m.openWebhooks(key, metrics); err != nil {
		return err
	}
	if err := m.serve(tokens, key, metrics); err != nil {
		return err
	}
	m.announce(tokens)
	return nil
}

// readInputs reads what the start needs from outside before it writes anything: the
// token file, the evidence settings, the API's TLS files, and whether the port is free.
// A port taken is found before the data folder and the signing key are made, so that a
// start that cannot serve leaves nothing behind; the listener itself is opened once
// recovery is over, so that no client waits on a service not yet ready.
func (m *Main) readInputs() (*intenthttp.Tokens, evidence.Extractor, error) {
	var tokens *intenthttp.Tokens
	if f := m.Config.API.Tokens; f != "" {
		var err error
		if tokens, err = intenthttp.LoadTokens(f); err != nil {
			return nil, nil, err
		}
	}
	extractor, err := m.extractor()
	if err != nil {
		return nil, nil, err
	}
	if err := m.loadTLS(); err != nil {
		return nil, nil, err
	}
	probe, err := net.Listen("tcp", m.Config.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("--listen: %w", err)
	}
	probe.Close()
	return tokens, extractor, nil
}

// newMetrics makes the registry /metrics serves, with the store's own metrics: Pebble's
// fsyncs, or the NATS store's followers.
func (m *Main) newMetrics() (*intenthttp.Metrics, error) {
	metrics := intenthttp.NewMetrics()
	if m.pebble != nil {
		if err := metrics.Registry().Register(m.pebble.FsyncCollector()); err != nil {
			return nil, fmt.Errorf("register the store's fsync metric: %w", err)
		}
	}
	if m.nats != nil {
		if err := metrics.Registry().Register(m.nats.Collector()); err != nil {
			return nil, fmt.Errorf("register the store's follower metric: %w", err)
		}
	}
	if m.Config.Cluster.Bind != "" {
		refused := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "intentd_cluster_peers_refused_total",
			Help: "In a cluster, the members this node refused because they speak no version of the cluster protocol it speaks (each logged once): no intent is routed to them.",
		}, func() float64 { return float64(m.peersRefused.Load()) })
		if err := metrics.Registry().Register(refused); err != nil {
			return nil, fmt.Errorf("register the cluster's refused peers metric: %w", err)
		}
	}
	return metrics, nil
}

// signingKey loads the key receipts are signed with: --signing-key, or signing.key in
// the data folder, created there on first start. A key file that exists but cannot be
// used stops the start rather than being replaced, since every earlier receipt names it.
func (m *Main) signingKey() (*crypto.SigningKey, error) {
	if m.Config.SigningKey != "" {
		return crypto.LoadSigningKey(m.Config.SigningKey)
	}
	path := filepath.Join(m.Config.DataDir, crypto.SigningKeyFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !m.Config.RotateSigningKey {
		// A new key is made for a store that has issued no receipt. Once one has, a
		// missing key file is far more likely a lost file than a wish to rotate: a new
		// key would leave every earlier receipt naming a key GET /info no longer shows.
		_, last, err := m.store.EventBounds(context.Background())
		if err != nil {
			return nil, fmt.Errorf("signing key: read the event log: %w", err)
		}
		if last > 0 {
			// The last event id, not a count: on NATS, and after an accepted loss on
			// Pebble, ids may skip numbers.
			return nil, fmt.Errorf("signing key: %s is missing, but this store has recorded outcomes (events up to id %d) whose receipts name the old key; "+
				"restore the file, or start once with --rotate-signing-key to make a new key (docs/proofs.md, \"Rotating the key\")", path, last)
		}
	}
	key, created, err := crypto.LoadOrCreateSigningKey(m.Config.DataDir)
	if err != nil {
		return nil, err
	}
	if created {
		m.logger.Info("created the signing key", "file", filepath.Join(m.Config.DataDir, crypto.SigningKeyFile), "key_id", key.ID())
	}
	return key, nil
}

// extractor builds the router over the built-in extractors: catalog (the --catalog
// file or the embedded demo catalog) by default, http when --extractor-url is given
// (and then by default), web by rule or by a policy naming it.
func (m *Main) extractor() (evidence.Extractor, error) {
	c := m.Config
	var err error
	if c.Evidence.Catalog != "" {
		if m.catalog, err = evidence.NewCatalog(c.Evidence.Catalog); err != nil {
			return nil, err
		}
	} else {
		m.catalog = evidence.DefaultCatalog()
	}
	extractors := map[string]evidence.Extractor{
		"catalog": m.catalog,
		"web":     evidence.NewWeb(),
	}
	var rc evidence.RouterConfig
	if c.Evidence.ExtractorConfig != "" {
		if rc, err = evidence.LoadRouterConfig(c.Evidence.ExtractorConfig); err != nil {
			return nil, err
		}
	}
	if c.Evidence.ExtractorURL != "" {
		extractors["http"] = evidence.NewHTTP(c.Evidence.ExtractorURL)
	}
	if rc.Default == "" {
		rc.Default = "catalog"
		if c.Evidence.ExtractorURL != "" {
			rc.Default = "http"
		}
	}
	return evidence.NewRouter(rc, extractors)
}

// loopback reports whether addr is on a loopback interface only: 127.0.0.0/8 or ::1.
// An unspecified address (":8080", "0.0.0.0") listens on every interface.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// URL is the base URL the server answers on, https:// with TLS, or "" before Run.
func (m *Main) URL() string {
	if m.ln == nil {
		return ""
	}
	scheme := "http://"
	if m.apiTLS != nil {
		scheme = "https://"
	}
	return scheme + m.ln.Addr().String()
}

// Done is closed when serving stops, after Close or on a listener failure.
func (m *Main) Done() <-chan struct{} { return m.served }

// Reload reads the catalog file, the API's TLS files and the members' TLS files again
// (SIGHUP). A bad file is logged and what was in use kept.
func (m *Main) Reload() {
	m.reloadTLS()
	if tc := m.clusterTLSConfig; tc != nil {
		if err := tc.Reload(); err != nil {
			m.logger.Error("cluster TLS reload failed; the certificate in use stays", "err", err)
		} else {
			m.logger.Info("cluster TLS files read again", "not_after", tc.NotAfter())
		}
	}
	if m.catalog == nil {
		return
	}
	if err := m.catalog.Reload(); err != nil {
		m.logger.Error("catalog reload failed; the previous catalog stays", "err", err)
		return
	}
	m.logger.Info("catalog reloaded", "solutions", m.catalog.Len())
}

// Close shuts down in order: stop accepting, end the event streams, let the requests
// in flight finish (up to the shutdown time-out), then close the engine and the store.
func (m *Main) Close() error {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	var errs []error
	if m.pprof != nil {
		m.pprof.Close()
	}
	if m.server != nil {
		if d := m.Config.API.ShutdownDelay; d > 0 {
			// Load balancers see /readyz fail and stop sending before the listener
			// closes, so that no client meets a refused connection.
			m.server.Drain()
			m.logger.Info("draining before shutdown", "delay", d)
			time.Sleep(d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.Config.API.ShutdownTimeout)
		if err := m.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shut the server down: %w", err))
		}
		cancel()
		if m.served != nil {
			<-m.served
			if err := m.serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs = append(errs, err)
			}
		}
	} else if m.ln != nil {
		m.ln.Close()
	}
	if m.stopWebhooks != nil {
		// Before the engine, whose closing would end the deliveries' subscriptions;
		// each gives its lease up, so that another member takes its endpoints at once.
		m.stopWebhooks()
	}
	if m.stopTlog != nil {
		// Before the engine, whose closing would end the log's subscription.
		m.stopTlog()
		<-m.tlogDone
	}
	if m.engine != nil {
		if err := m.engine.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close the engine: %w", err))
		}
	}
	if m.tlog != nil {
		// After the engine, which leaves the cluster and waits for the reads of the log
		// it was serving to the members that keep none: none may reach a closed log.
		if err := m.tlog.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close the transparency log: %w", err))
		}
	}
	if m.store != nil {
		if err := m.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close the store: %w", err))
		}
	}
	if m.stopTLSWatch != nil {
		m.stopTLSWatch()
	}
	if m.stopAPITLSWatch != nil {
		m.stopAPITLSWatch()
	}
	if m.natsSrv != nil {
		m.natsSrv.Shutdown()
	}
	// Last, so that the spans of the requests and proofs that ended the stop are sent.
	m.closeTracing()
	if m.logger != nil {
		m.logger.Info("stopped")
	}
	if m.logw != nil {
		_ = m.logw.Flush()
	}
	return errors.Join(errs...)
}
