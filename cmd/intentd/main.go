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
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/cluster/natsprovider"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/natsstore"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/tlog"
	"github.com/nats-io/nats.go/jetstream"
)

// maxIntentTTL bounds --intent-ttl: deadlines are kept as Unix nanoseconds, which end in
// 2262, and a century is past any wait for a proposal.
const maxIntentTTL = 100 * 365 * 24 * time.Hour

func main() {
	m := NewMain()
	if err := m.ParseFlags(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "intentd:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "intentd:", err)
		m.Close()
		os.Exit(1)
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	exit := 0
	for done := false; !done; {
		select {
		case <-hup:
			m.Reload()
		case <-m.Done():
			m.logger.Error("the server stopped serving", "err", m.serveErr)
			done = true
		case <-m.Fenced():
			exit, done = 1, true
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

// Config is the server's settings, as the flags and environment give them.
type Config struct {
	Listen        string
	DataDir       string
	AllowUnsigned bool
	PasskeyOrigin string
	PasskeyRPID   string
	// PasskeyTopOrigins are the sites that may frame PasskeyOrigin's page.
	PasskeyTopOrigins []string
	// PasskeyRequireUV refuses passkey assertions made without user verification.
	PasskeyRequireUV bool
	IntentTTL        time.Duration
	MaxProving       int
	ProvingQueue     int
	// MaxPreviewing and MaxPreviews bound previews: at once, and per intent.
	MaxPreviewing     int
	MaxPreviews       int
	Catalog           string
	ExtractorURL      string
	ExtractorConfig   string
	EventRetention    uint64
	EventRetentionAge time.Duration
	MaxBody           int64
	LogFormat         string
	LogLevel          string
	// LogRequests logs every request at info, not only those answered with an error.
	LogRequests     bool
	ShutdownTimeout time.Duration
	// SigningKey is the receipt key file; empty: signing.key in DataDir, made on first start.
	SigningKey string
	// MinFreeDisk is the free space below which writes are refused; 0: never.
	MinFreeDisk int64
	// AcceptDataLoss starts on a store whose write-ahead log lost acknowledged writes.
	AcceptDataLoss bool
	// RotateSigningKey changes the key on purpose: a missing signing.key is made anew
	// in a store that has issued receipts under the old one, and a transparency log
	// signed by another key goes on under this one.
	RotateSigningKey bool
	// Tokens is the file of bearer token hashes and roles; empty: no caller authentication.
	Tokens string
	// The caller limits beyond the body size (intenthttp.Limits).
	MaxSolution     int
	MaxAttrs        int
	MaxSet          int
	MaxString       int
	MaxSubscribers  int
	MaxPolicySource int
	// ShutdownDelay is how long GET /readyz answers 503 before the listener closes.
	ShutdownDelay time.Duration
	// CORSOrigins are the origins whose browser pages may call the API, in the form
	// browsers send them; empty: CORS off.
	CORSOrigins []string
	// Store is "pebble" (in DataDir) or the NATS servers, nats://HOST:PORT[,nats://...].
	Store string
	// The NATS store's connection and layout (natsstore.Options).
	NatsCreds    string
	NatsToken    string
	NatsTLSCA    string
	NatsPrefix   string
	NatsReplicas int
	// NatsEmbed runs a NATS server with JetStream in DataDir inside intentd and keeps the
	// store on it; NatsEmbedConfig is that server's configuration file (cluster, ports).
	NatsEmbed       bool
	NatsEmbedConfig string
	// UI serves the browser console under /ui/.
	UI bool
	// ClusterBind, when set, makes this node a member of a cluster (docs/cluster.md):
	// the HOST:PORT the other members reach its actors at. It needs a NATS store.
	ClusterBind string
	// ClusterName keeps clusters apart on one NATS.
	ClusterName string
	// Pprof is the address of a listener serving net/http/pprof; empty: none.
	Pprof string
	// Tlog keeps the transparency log of outcomes and serves it under /log/.
	Tlog bool
	// TlogDir is the log's folder; empty: tlog in DataDir.
	TlogDir string
	// TlogOrigin is the origin line of its checkpoints; empty: tlog.DefaultOrigin.
	TlogOrigin string
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
	// LookupEnv reads the environment; os.LookupEnv by default.
	LookupEnv func(string) (string, bool)

	// tuneEngine lets tests set engine options that have no flag.
	tuneEngine func(*actors.Config)

	logger  *slog.Logger
	catalog *evidence.Catalog
	store   storeCloser
	pebble  *persistence.Store // the store when it is Pebble: its fsync metric
	nats    *natsstore.Store   // the store when it is NATS: cluster mode's membership uses its connection
	fenced  chan struct{}      // closed when this node was dropped from its cluster
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
	server   *intenthttp.Server
	ln       net.Listener
	pprof    *http.Server
	logw     *intenthttp.LogWriter // nil: logs go straight to Stderr
	// served is closed when Serve returns, with serveErr set before.
	served   chan struct{}
	serveErr error
	closeMu  sync.Mutex
	closed   bool
}

// NewMain returns a Main with the defaults.
func NewMain() *Main {
	return &Main{Stderr: os.Stderr, LookupEnv: os.LookupEnv}
}

// envName is the environment variable that sets a flag when the command line does not.
func envName(flagName string) string {
	return "INTENTD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ParseFlags reads the settings: a flag on the command line wins over its environment
// variable, which wins over the default.
func (m *Main) ParseFlags(args []string) error {
	c := &m.Config
	// The engine's defaults are written once, in actors.DefaultConfig; the flags show them.
	def := actors.DefaultConfig()
	fs := flag.NewFlagSet("intentd", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	fs.StringVar(&c.DataDir, "data", "./data", "folder of the Pebble store; created when missing")
	fs.BoolVar(&c.AllowUnsigned, "allow-unsigned", false, "accept intents whose authorship is \"Unsigned\"")
	fs.StringVar(&c.PasskeyOrigin, "passkey-origin", "", "the only origin a passkey's client data may name (empty: not checked)")
	fs.Var(&listFlag{vals: &c.PasskeyTopOrigins}, "passkey-top-origin", "a site that may frame the --passkey-origin page when it asks for a signature (repeatable, or a comma list); without it an assertion made in a cross-origin frame is refused")
	fs.StringVar(&c.PasskeyRPID, "passkey-rp-id", "", "the relying party id a passkey's authenticator data must carry (empty: not checked)")
	fs.BoolVar(&c.PasskeyRequireUV, "passkey-require-uv", false, "refuse a passkey assertion whose authenticator data lacks the user-verified flag (a PIN or biometric), as authorship_invalid")
	fs.DurationVar(&c.IntentTTL, "intent-ttl", def.IntentTTL, "how long an intent waits for a proposal before it expires")
	fs.IntVar(&c.MaxProving, "max-proving", def.MaxProving, "proposals proved at once")
	fs.IntVar(&c.MaxPreviewing, "max-previewing", def.MaxPreviewing, "previews decided at once, a share beside --max-proving; previews are refused (503) while proposals wait")
	fs.IntVar(&c.MaxPreviews, "max-previews", def.MaxPreviewsPerIntent, "previews one intent may have (429 past it), counted in memory until the intent ends or the service restarts; 0: no bound")
	fs.IntVar(&c.ProvingQueue, "proving-queue", def.ProvingQueue, "accepted proposals that may wait for a proving slot; 0: none wait, a full service answers 503")
	fs.StringVar(&c.Catalog, "catalog", "", "catalog file of evidence by solution (JSON); empty: the embedded demo catalog")
	fs.StringVar(&c.ExtractorURL, "extractor-url", "", "base URL of an evidence service; makes the http extractor (POST BASE/extract) the default")
	fs.StringVar(&c.ExtractorConfig, "extractor-config", "", "JSON file of rules choosing an extractor per solution (see docs/evidence.md)")
	fs.Uint64Var(&c.EventRetention, "event-retention", def.EventRetention, "newest events kept for replay")
	fs.DurationVar(&c.EventRetentionAge, "event-retention-age", def.EventRetentionAge, "events older than this are dropped")
	fs.Int64Var(&c.MaxBody, "max-body", intenthttp.DefaultMaxBodyBytes, "largest request body in bytes")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&c.LogRequests, "log-requests", false, "log a line for every request at info; without it, only requests answered with an error are (the others at debug)")
	fs.StringVar(&c.SigningKey, "signing-key", "", "file of the Ed25519 key receipts are signed with (Base58 seed, mode 0600); empty: signing.key in the data folder, created on first start")
	fs.Int64Var(&c.MinFreeDisk, "min-free-disk", persistence.DefaultMinFreeBytes, "free bytes of the data folder's disk below which writes are refused with 503 storage_full while reads go on (0: never refused, and a full disk stops the service)")
	fs.BoolVar(&c.AcceptDataLoss, "accept-data-loss", false, "start even though the store's write-ahead log lost acknowledged writes (damaged after it was written), or its mark (intentd.mark) is damaged or missing; without it such a store is refused")
	fs.BoolVar(&c.RotateSigningKey, "rotate-signing-key", false, "change the signing key on purpose: when signing.key is missing from a data folder whose store has issued receipts, make a new key instead of refusing to start; when the transparency log was signed by another key, go on under this one")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a shutdown waits for requests in flight")
	fs.DurationVar(&c.ShutdownDelay, "shutdown-delay", 0, "how long a shutdown answers 503 on /readyz, still serving, before it stops accepting connections")
	fs.Var(&listFlag{vals: &c.CORSOrigins}, "cors-origin", "an origin (scheme://host[:port]) whose browser pages may call the API (repeatable, or a comma list); * allows every origin on the routes that need no token (all of them without --tokens); empty: CORS off")
	fs.StringVar(&c.Tokens, "tokens", "", "file of bearer token hashes and their roles (see docs/operating.md); empty: no caller authentication")
	fs.IntVar(&c.MaxSolution, "max-solution", intenthttp.DefaultMaxSolutionBytes, "largest proposal solution in bytes (at most --max-body, and at most 1048576); by default 16384, or --max-body when that is smaller")
	fs.IntVar(&c.MaxAttrs, "max-attrs", intenthttp.DefaultMaxAttrs, "most fields in an intent's attrs")
	fs.IntVar(&c.MaxSet, "max-set", intenthttp.DefaultMaxSetElements, "most elements in one set value of an intent's attrs")
	fs.IntVar(&c.MaxString, "max-string", intenthttp.DefaultMaxStringBytes, "largest string value of an intent's attrs, in bytes")
	fs.IntVar(&c.MaxSubscribers, "max-subscribers", def.MaxSubscribers, "most clients of the event stream at once (503 past it)")
	fs.StringVar(&c.Store, "store", "pebble", "where state is kept: pebble (in --data) or NATS JetStream servers, nats://HOST:PORT[,nats://...]")
	fs.StringVar(&c.NatsCreds, "nats-creds", "", "NATS credentials file (JWT and seed)")
	fs.StringVar(&c.NatsToken, "nats-token", "", "NATS token")
	fs.StringVar(&c.NatsTLSCA, "nats-tls-ca", "", "PEM file of the CAs that sign the NATS servers' certificates")
	fs.StringVar(&c.NatsPrefix, "nats-prefix", "intentd", "first token of the store's subjects; the stream is named for it")
	fs.IntVar(&c.NatsReplicas, "nats-replicas", 0, "replicas of the NATS stream; 0: 3 when the cluster has 3 servers or more, else 1")
	fs.BoolVar(&c.NatsEmbed, "nats-embed", false, "run a NATS server with JetStream in --data inside intentd and keep state on it")
	fs.StringVar(&c.NatsEmbedConfig, "nats-embed-config", "", "nats-server configuration file of the embedded server (cluster, ports, accounts)")
	fs.StringVar(&c.ClusterBind, "cluster-bind", "", "HOST:PORT the other members of a cluster reach this node's actors at; set, it turns cluster mode on (needs a NATS store)")
	fs.StringVar(&c.ClusterName, "cluster-name", "intentd", "name of the cluster, so that clusters on one NATS stay apart")
	fs.BoolVar(&c.UI, "ui", true, "serve the browser console under /ui/ (see docs/console.md); --ui=false leaves /ui/ unserved")
	fs.StringVar(&c.Pprof, "pprof", "", "address (host:port) of a second listener serving the Go profiler, net/http/pprof, with no authentication: keep it on the loopback interface; empty: off")
	fs.BoolVar(&c.Tlog, "tlog", true, "keep the transparency log of outcomes and serve it under /log/ (docs/proofs.md)")
	fs.StringVar(&c.TlogDir, "tlog-dir", "", "folder of the transparency log's leaves and tree; empty: tlog in --data")
	fs.StringVar(&c.TlogOrigin, "tlog-origin", "", "origin line of the log's checkpoints, the same on every member of a cluster; empty: intentd/<receipt key id>")
	fs.IntVar(&c.MaxPolicySource, "max-policy-source", intenthttp.DefaultMaxPolicySourceBytes, "largest policy source in bytes (at most 65536; 413 past it)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: intentd [flags]\n\nEach flag can also be set by the environment variable INTENTD_<NAME>,\nfor example INTENTD_LISTEN or INTENTD_ALLOW_UNSIGNED; a flag given here wins.\n\n")
		fs.PrintDefaults()
	}

	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if envErr != nil {
			return
		}
		if v, ok := m.LookupEnv(envName(f.Name)); ok {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %v", envName(f.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return envErr
	}
	fs.VisitAll(func(f *flag.Flag) {
		if l, ok := f.Value.(*listFlag); ok {
			l.replace = true
		}
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (every setting is a flag; see -h)", fs.Arg(0))
	}
	// The default solution limit yields to a smaller body limit, which would refuse a
	// longer solution anyway; a limit the operator gives must fit in the body limit.
	_, solutionGiven := m.LookupEnv(envName("max-solution"))
	fs.Visit(func(f *flag.Flag) { solutionGiven = solutionGiven || f.Name == "max-solution" })
	if !solutionGiven && c.MaxBody > 0 && int64(c.MaxSolution) > c.MaxBody {
		c.MaxSolution = int(c.MaxBody)
	}
	return c.validate()
}

// listFlag is a flag that may be given more than once, each time with one value or a
// comma list, so that the environment variable (one string) can say what several flags
// say. Values given on the command line replace the variable's rather than add to them,
// as every other flag's do: ParseFlags sets replace between the two.
type listFlag struct {
	vals    *[]string
	replace bool
}

func (l *listFlag) String() string {
	if l.vals == nil {
		return ""
	}
	return strings.Join(*l.vals, ",")
}

func (l *listFlag) Set(v string) error {
	if l.replace {
		*l.vals, l.replace = nil, false
	}
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l.vals = append(*l.vals, part)
		}
	}
	return nil
}

func (c *Config) validate() error {
	switch {
	case c.LogFormat != "text" && c.LogFormat != "json":
		return fmt.Errorf("--log-format %q: want text or json", c.LogFormat)
	case c.MaxProving < 1:
		return fmt.Errorf("--max-proving %d: want at least 1", c.MaxProving)
	case c.MaxPreviewing < 1:
		return fmt.Errorf("--max-previewing %d: want at least 1", c.MaxPreviewing)
	case c.MaxPreviews < 0:
		return fmt.Errorf("--max-previews %d: want 0 (no bound) or more", c.MaxPreviews)
	case c.ProvingQueue < 0:
		return fmt.Errorf("--proving-queue %d: want 0 or more", c.ProvingQueue)
	case c.IntentTTL <= 0 || c.IntentTTL > maxIntentTTL:
		return fmt.Errorf("--intent-ttl %s: want a positive duration of at most %s (100 years)", c.IntentTTL, maxIntentTTL)
	case c.EventRetention < 1:
		return fmt.Errorf("--event-retention %d: want at least 1", c.EventRetention)
	case c.EventRetentionAge <= 0:
		return fmt.Errorf("--event-retention-age %s: want a positive duration", c.EventRetentionAge)
	case c.MaxBody < 1:
		return fmt.Errorf("--max-body %d: want at least 1", c.MaxBody)
	case c.MinFreeDisk < 0:
		return fmt.Errorf("--min-free-disk %d: want 0 or more bytes", c.MinFreeDisk)
	case c.DataDir == "":
		return errors.New("--data: want a folder")
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("--shutdown-timeout %s: want a positive duration", c.ShutdownTimeout)
	case c.ShutdownDelay < 0:
		return fmt.Errorf("--shutdown-delay %s: want 0 or a positive duration", c.ShutdownDelay)
	case c.MaxSolution < 1 || int64(c.MaxSolution) > c.MaxBody || c.MaxSolution > intentd.MaxSolutionBytes:
		return fmt.Errorf("--max-solution %d: want 1 to %d (at most --max-body, %d, and at most the engine's limit, %d)",
			c.MaxSolution, min(c.MaxBody, intentd.MaxSolutionBytes), c.MaxBody, intentd.MaxSolutionBytes)
	case c.MaxAttrs < 1:
		return fmt.Errorf("--max-attrs %d: want at least 1", c.MaxAttrs)
	case c.MaxSet < 1:
		return fmt.Errorf("--max-set %d: want at least 1", c.MaxSet)
	case c.MaxString < 1:
		return fmt.Errorf("--max-string %d: want at least 1", c.MaxString)
	case c.MaxSubscribers < 1:
		return fmt.Errorf("--max-subscribers %d: want at least 1", c.MaxSubscribers)
	case c.MaxPolicySource < 1 || c.MaxPolicySource > policy.MaxSourceBytes:
		return fmt.Errorf("--max-policy-source %d: want 1 to %d (the policy language's limit)", c.MaxPolicySource, policy.MaxSourceBytes)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	for i, o := range c.CORSOrigins {
		norm, err := intenthttp.ParseCORSOrigin(o)
		if err != nil {
			return fmt.Errorf("--cors-origin: %v", err)
		}
		c.CORSOrigins[i] = norm
	}
	return c.validateStore()
}

func (c *Config) validateStore() error {
	nats := c.Store != "pebble"
	if nats {
		for _, u := range strings.Split(c.Store, ",") {
			if !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
				return fmt.Errorf("--store %q: want pebble or nats://HOST:PORT[,nats://HOST:PORT...]", c.Store)
			}
		}
	}
	switch {
	case nats && c.NatsEmbed:
		return errors.New("--store names NATS servers and --nats-embed runs one: give one of them")
	case c.NatsEmbedConfig != "" && !c.NatsEmbed:
		return errors.New("--nats-embed-config without --nats-embed")
	case c.NatsReplicas < 0:
		return fmt.Errorf("--nats-replicas %d: want 0 (automatic) or more", c.NatsReplicas)
	case c.NatsCreds != "" && c.NatsToken != "":
		return errors.New("--nats-creds and --nats-token: give one of them")
	case c.ClusterBind != "" && !nats && !c.NatsEmbed:
		return errors.New("--cluster-bind needs a store every member shares: --store nats://... or --nats-embed")
	case !clusterName.MatchString(c.ClusterName):
		return fmt.Errorf("--cluster-name %q: letters, digits, - and _ only", c.ClusterName)
	}
	if c.ClusterBind != "" {
		if _, _, err := clusterAddr(c.ClusterBind); err != nil {
			return fmt.Errorf("--cluster-bind: %w", err)
		}
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// Run opens the store and the engine, waits for start-up recovery, and starts serving.
// It returns once the server listens; Done reports when serving stops, and Close shuts
// everything down. On an error Close undoes what Run did.
func (m *Main) Run(ctx context.Context) error {
	c := m.Config
	level, err := parseLevel(c.LogLevel)
	if err != nil {
		return err
	}
	hopts := &slog.HandlerOptions{Level: level}
	out := m.Stderr
	if f, ok := out.(*os.File); ok {
		// A line per request written on its own costs a busy server more than the
		// request's other bookkeeping; lines wait up to 20 ms to share a write.
		m.logw = intenthttp.NewLogWriter(f, 20*time.Millisecond)
		out = m.logw
	}
	var h slog.Handler = slog.NewTextHandler(out, hopts)
	if c.LogFormat == "json" {
		h = slog.NewJSONHandler(out, hopts)
	}
	if m.logw != nil {
		h = m.logw.Handler(h)
	}
	m.logger = slog.New(h)

	var tokens *intenthttp.Tokens
	if c.Tokens != "" {
		if tokens, err = intenthttp.LoadTokens(c.Tokens); err != nil {
			return err
		}
	}
	extractor, err := m.extractor()
	if err != nil {
		return err
	}
	if err := m.openStore(ctx); err != nil {
		return err
	}
	key, err := m.signingKey()
	if err != nil {
		return err
	}
	if c.ClusterBind != "" {
		if err := m.checkClusterKey(ctx, key.ID()); err != nil {
			return err
		}
	}
	if c.Tlog {
		// Before the engine, which signs receipts as its start-up recovery proves
		// again: a key the log shows to be another than the one that signed it stops
		// the start before anything is signed with it.
		if err := m.openTlog(key); err != nil {
			return err
		}
	}
	metrics := intenthttp.NewMetrics()
	if m.pebble != nil {
		if err := metrics.Registry().Register(m.pebble.FsyncCollector()); err != nil {
			return fmt.Errorf("register the store's fsync metric: %w", err)
		}
	}
	ecfg := actors.DefaultConfig()
	ecfg.Store, ecfg.Extractor = m.store, extractor
	ecfg.Prover = actors.ReceiptProver{Key: key}
	ecfg.Verify = crypto.VerifyOptions{
		AllowUnsigned:     c.AllowUnsigned,
		PasskeyOrigin:     c.PasskeyOrigin,
		PasskeyRPID:       c.PasskeyRPID,
		PasskeyTopOrigins: c.PasskeyTopOrigins,
		PasskeyRequireUV:  c.PasskeyRequireUV,
	}
	ecfg.IntentTTL, ecfg.MaxProving, ecfg.ProvingQueue = c.IntentTTL, c.MaxProving, c.ProvingQueue
	ecfg.MaxPreviewing, ecfg.MaxPreviewsPerIntent = c.MaxPreviewing, c.MaxPreviews
	// The engine holds the solution limit too, so that /mcp, which reaches it without
	// the HTTP layer's checks of a body, refuses what POST .../proposal refuses.
	ecfg.MaxSolutionBytes = c.MaxSolution
	ecfg.EventRetention, ecfg.EventRetentionAge = c.EventRetention, c.EventRetentionAge
	ecfg.MaxSubscribers = c.MaxSubscribers
	if c.Tlog {
		// The log follows the events as a subscriber of its own; the streams' clients
		// keep every place --max-subscribers gives them.
		ecfg.OwnSubscribers = 1
	}
	ecfg.Logger = m.logger.With("component", "engine")
	ecfg.Observer = metrics.Observer()
	if c.ClusterBind != "" {
		cc, err := m.clusterConfig()
		if err != nil {
			return err
		}
		ecfg.Cluster = cc
	}
	if m.tuneEngine != nil {
		m.tuneEngine(&ecfg)
	}
	m.engine, err = actors.Open(ecfg)
	if err != nil {
		return fmt.Errorf("start the engine: %w", err)
	}
	select {
	case <-m.engine.Ready():
	case <-ctx.Done():
		return ctx.Err()
	}

	opts := m.HTTP
	opts.Logger = m.logger.With("component", "http")
	opts.MaxBodyBytes = c.MaxBody
	opts.Limits = intenthttp.Limits{
		MaxSolutionBytes:     c.MaxSolution,
		MaxAttrs:             c.MaxAttrs,
		MaxSetElements:       c.MaxSet,
		MaxStringBytes:       c.MaxString,
		MaxPolicySourceBytes: c.MaxPolicySource,
	}
	opts.Tokens = tokens
	opts.CORSOrigins = c.CORSOrigins
	opts.LogRequests = c.LogRequests
	opts.Console = c.UI
	opts.Metrics = metrics
	opts.Ready = m.engine.Ready()
	if w, ok := m.store.(interface{ Writable() error }); ok {
		opts.Writable = w.Writable
	}
	opts.Info = intentd.Info{
		UnsignedPermitted: c.AllowUnsigned,
		IntentTTLSeconds:  int64(c.IntentTTL / time.Second),
		EventRetention:    c.EventRetention,
		// The engine enforces it; its default is the engine's (actors.DefaultConfig).
		MaxSubscribers:       c.MaxSubscribers,
		MaxPreviewsPerIntent: c.MaxPreviews,
		PublicKey:            crypto.EncodeBase58(key.PublicKey()),
		KeyID:                key.ID(),
	}
	if c.ClusterBind != "" {
		opts.Info.Cluster = &intentd.ClusterInfo{Name: c.ClusterName}
		opts.ClusterMembers = m.engine.ClusterMembers
	}
	if m.tlog != nil {
		m.runTlog()
		opts.Log = m.tlog
		opts.Info.LogOrigin, opts.Info.LogVerifierKey = m.tlog.Origin(), m.tlog.VerifierKey()
	}
	var served intentd.Engine = m.engine
	if m.tlog != nil {
		served = loggedEngine{m.engine, m.tlog}
	}
	m.server = intenthttp.NewServer(served, opts)
	m.ln, err = net.Listen("tcp", c.Listen)
	if err != nil {
		return err
	}
	if c.Pprof != "" {
		// A listener of its own, so that the profiler is never reachable where the API is.
		pln, err := net.Listen("tcp", c.Pprof)
		if err != nil {
			m.ln.Close()
			return fmt.Errorf("--pprof: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		m.pprof = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go m.pprof.Serve(pln)
		m.logger.Info("serving the profiler", "url", "http://"+pln.Addr().String()+"/debug/pprof/")
	}
	m.served = make(chan struct{})
	go func() {
		m.serveErr = m.server.Serve(m.ln)
		close(m.served)
	}()

	m.logger.Info("listening", "url", m.URL(), "data", c.DataDir, "unsigned_permitted", c.AllowUnsigned, "auth_required", tokens != nil)
	if tokens == nil && !loopback(m.ln.Addr()) {
		m.logger.Warn("no caller authentication (--tokens) while listening beyond the loopback interface: anyone who reaches this address can store policies and intents",
			"listen", c.Listen)
	}
	if m.logw != nil {
		_ = m.logw.Flush() // the lines so far, before the banner
	}
	if c.LogFormat == "text" {
		fmt.Fprintf(m.Stderr, "\nintentd is listening on %[1]s\n  curl -s %[1]s/info\n  curl -N %[1]s/events          # the outcome stream\nA walk-through with curl: docs/api.md\n\n", m.URL())
	}
	return nil
}

// loggedEngine is the engine as the HTTP layer sees it beside a transparency log: the
// event subscribers it counts are the streams' clients, without the log's own.
type loggedEngine struct {
	*actors.Engine
	log *tlog.Log
}

// Subscribers counts the engine's subscribers but the log's.
func (e loggedEngine) Subscribers() int {
	n := e.Engine.Subscribers()
	if e.log.Following() && n > 0 {
		n--
	}
	return n
}

// openTlog opens the transparency log, refusing a log signed by another key than the
// receipt key unless the key was changed on purpose: --rotate-signing-key, or a key
// file named by --signing-key, which the docs give as the way to change it.
func (m *Main) openTlog(key *crypto.SigningKey) error {
	dir := m.Config.TlogDir
	if dir == "" {
		dir = filepath.Join(m.Config.DataDir, "tlog")
	}
	// Both stores keep the log's entries, so that the log outlives the events' retention
	// and every node of a cluster rebuilds the same tree (docs/proofs.md).
	shared, _ := m.store.(intentd.LogStore)
	l, err := tlog.Open(tlog.Options{Dir: dir, Key: key, Origin: m.Config.TlogOrigin, Logger: m.logger.With("component", "tlog"), Store: shared,
		AcceptKeyChange: m.Config.RotateSigningKey || m.Config.SigningKey != ""})
	var keyErr *tlog.KeyError
	if errors.As(err, &keyErr) {
		return fmt.Errorf("signing key: %s (key id %s) is not the key that signed the transparency log in %s, whose checkpoint of %d leaves names the origin %s; "+
			"restore the key file that signed it, or start once with --rotate-signing-key to change the key on purpose (docs/proofs.md, \"Rotating the key\")",
			filepath.Join(m.Config.DataDir, crypto.SigningKeyFile), key.ID(), dir, keyErr.Size, keyErr.Origin)
	}
	if err != nil {
		return fmt.Errorf("open the transparency log: %w", err)
	}
	m.tlog, m.tlogDir = l, dir
	return nil
}

// runTlog starts the transparency log following the engine's events.
func (m *Main) runTlog() {
	l := m.tlog
	ctx, cancel := context.WithCancel(context.Background())
	m.stopTlog, m.tlogDone = cancel, make(chan struct{})
	go func() {
		defer close(m.tlogDone)
		_ = l.Run(ctx, m.engine)
	}()
	m.logger.Info("transparency log", "component", "tlog", "dir", m.tlogDir, "origin", l.Origin(), "leaves", l.Size())
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
	if c.Catalog != "" {
		if m.catalog, err = evidence.NewCatalog(c.Catalog); err != nil {
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
	if c.ExtractorConfig != "" {
		if rc, err = evidence.LoadRouterConfig(c.ExtractorConfig); err != nil {
			return nil, err
		}
	}
	if c.ExtractorURL != "" {
		extractors["http"] = evidence.NewHTTP(c.ExtractorURL)
	}
	if rc.Default == "" {
		rc.Default = "catalog"
		if c.ExtractorURL != "" {
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

// URL is the base URL the server answers on, or "" before Run.
func (m *Main) URL() string {
	if m.ln == nil {
		return ""
	}
	return "http://" + m.ln.Addr().String()
}

// Done is closed when serving stops, after Close or on a listener failure.
func (m *Main) Done() <-chan struct{} { return m.served }

// Reload reads the catalog file again (SIGHUP). A bad file is logged and the old
// catalog kept.
func (m *Main) Reload() {
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
		if d := m.Config.ShutdownDelay; d > 0 {
			// Load balancers see /readyz fail and stop sending before the listener
			// closes, so that no client meets a refused connection.
			m.server.Drain()
			m.logger.Info("draining before shutdown", "delay", d)
			time.Sleep(d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownTimeout)
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
	if m.stopTlog != nil {
		// Before the engine, whose closing would end the log's subscription.
		m.stopTlog()
		<-m.tlogDone
	}
	if m.tlog != nil {
		if err := m.tlog.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close the transparency log: %w", err))
		}
	}
	if m.engine != nil {
		if err := m.engine.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close the engine: %w", err))
		}
	}
	if m.store != nil {
		if err := m.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close the store: %w", err))
		}
	}
	if m.natsSrv != nil {
		m.natsSrv.Shutdown()
	}
	if m.logger != nil {
		m.logger.Info("stopped")
	}
	if m.logw != nil {
		_ = m.logw.Flush()
	}
	return errors.Join(errs...)
}

// storeCloser is the store the engine runs on, closed after it.
type storeCloser interface {
	intentd.Store
	Close() error
}

// openStore opens the store the flags name: Pebble in the data folder, NATS servers, or
// a NATS server started here with its JetStream files in the data folder.
func (m *Main) openStore(ctx context.Context) error {
	c := m.Config
	log := m.logger.With("component", "store")
	if c.Store == "pebble" && !c.NatsEmbed {
		s, err := persistence.Open(c.DataDir, persistence.Options{Logger: log, AcceptDataLoss: c.AcceptDataLoss, MinFreeBytes: c.MinFreeDisk})
		if err != nil {
			return err
		}
		m.store, m.pebble, m.digest = s, s, s.Digest
		return nil
	}
	urls := strings.Split(c.Store, ",")
	if c.NatsEmbed {
		srv, err := natsstore.Embed(natsstore.EmbedOptions{
			Dir:        filepath.Join(c.DataDir, "nats"),
			ConfigFile: c.NatsEmbedConfig,
			Logger:     m.logger,
		})
		if err != nil {
			return err
		}
		m.natsSrv = srv
		urls = []string{srv.URL()}
	}
	s, err := natsstore.Open(ctx, natsstore.Options{
		URLs:     urls,
		Creds:    c.NatsCreds,
		Token:    c.NatsToken,
		TLSCA:    c.NatsTLSCA,
		Prefix:   c.NatsPrefix,
		Replicas: c.NatsReplicas,
		Logger:   log,
	})
	if err != nil {
		return err
	}
	m.store, m.digest, m.nats = s, s.Digest, s
	return nil
}

// clusterBucket names a key-value bucket of the cluster: after the store's prefix as well
// as the cluster's name, so that services on one NATS with different prefixes never
// form one cluster of members that do not share a stream.
func clusterBucket(c Config, what string) string {
	return strings.ReplaceAll(c.NatsPrefix, ".", "_") + "_" + what + "_" + c.ClusterName
}

// clusterName is what a cluster's name may be: it names a key-value bucket.
var clusterName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// clusterAddr splits --cluster-bind: other members dial it, so it needs a host and a
// port.
func clusterAddr(s string) (string, int, error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("%q: want HOST:PORT with a port from 1 to 65535", s)
	}
	return host, port, nil
}

// clusterConfig is the engine's cluster mode, membership on the store's NATS. A member
// that finds itself dropped from the cluster stops: its supervisor starts it again and
// it rejoins as a new member, rather than serve intents the others now own.
func (m *Main) clusterConfig() (*actors.ClusterConfig, error) {
	c := m.Config
	host, port, _ := clusterAddr(c.ClusterBind)
	m.fenced = make(chan struct{})
	var once sync.Once
	prov, err := natsprovider.New(natsprovider.Config{
		JetStream: m.nats.JetStream(),
		Bucket:    clusterBucket(c, "members"),
		Replicas:  m.nats.Replicas(),
		Logger:    m.logger,
		OnFenced: func(reason error) {
			m.logger.Error("this node was dropped from the cluster: stopping, to rejoin as a new member", "err", reason)
			once.Do(func() { close(m.fenced) })
		},
	})
	if err != nil {
		return nil, err
	}
	return &actors.ClusterConfig{Name: c.ClusterName, Host: host, Port: port, Provider: prov}, nil
}

// checkClusterKey refuses to join a cluster whose members sign with another key: a
// receipt is signed by whichever member proved the intent, and a verifier pins one key.
// The first member records its key id beside the members; the others must match it.
func (m *Main) checkClusterKey(ctx context.Context, keyID string) error {
	name := m.Config.ClusterName
	var kv jetstream.KeyValue
	var err error
	// Servers started with the node may still be placing a new bucket: try again for
	// as long as the store waits for its stream.
	for start := time.Now(); ; {
		try, cancel := context.WithTimeout(ctx, 5*time.Second)
		kv, err = m.nats.JetStream().CreateOrUpdateKeyValue(try, jetstream.KeyValueConfig{
			Bucket:      clusterBucket(m.Config, "cluster"),
			Description: "intentd cluster " + name + ": what every member must agree on",
			Replicas:    m.nats.Replicas(),
		})
		cancel()
		if err == nil || ctx.Err() != nil || time.Since(start) > 30*time.Second || !errors.Is(err, context.DeadlineExceeded) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("cluster %s: %w", name, err)
	}
	if _, err := kv.Create(ctx, "signing_key_id", []byte(keyID)); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("cluster %s: record the signing key: %w", name, err)
	}
	e, err := kv.Get(ctx, "signing_key_id")
	if err != nil {
		return fmt.Errorf("cluster %s: read the signing key: %w", name, err)
	}
	if got := string(e.Value()); got != keyID {
		return fmt.Errorf("cluster %s signs receipts with key %s and this node with %s: give every member the same --signing-key (docs/cluster.md)", name, got, keyID)
	}
	return nil
}

// Fenced is closed when this node was dropped from its cluster and must stop; it is nil
// (never ready) outside cluster mode.
func (m *Main) Fenced() <-chan struct{} { return m.fenced }
