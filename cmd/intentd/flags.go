package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/cluster/clustertls"
	"github.com/intentd/intentd/crypto"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/internal/buildinfo"
	"github.com/intentd/intentd/internal/redact"
	"github.com/intentd/intentd/internal/secretfile"
	"github.com/intentd/intentd/natsstore"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/policy"
	iproof "github.com/intentd/intentd/proof"
	"github.com/intentd/intentd/tlog"
	"github.com/intentd/intentd/webhook"
)

// maxIntentTTL bounds --intent-ttl: deadlines are kept as Unix nanoseconds, which end in
// 2262, and a century is past any wait for a proposal.
const maxIntentTTL = 100 * 365 * 24 * time.Hour

// defaultFollowWindow is --nats-follow-window's default: on a stream taking 300 intents
// a second it made a member that only follows spend about a third less CPU, and an
// event reach its subscribers about 10 ms later on average (docs/cluster.md).
const defaultFollowWindow = 20 * time.Millisecond

// Config is the server's settings, as the flags and environment give them. It is
// built around the option structs of the packages the flags configure, which the flags
// fill in place: Run hands each on and adds what no flag sets (the store, the logger,
// the key), so that a setting is named once, where it is used.
type Config struct {
	// Listen is the HTTP API's address.
	Listen string
	// DataDir is the folder of the Pebble store, the signing key, the embedded NATS
	// server and the transparency log.
	DataDir string
	// Store is "pebble" (in DataDir) or the NATS servers, nats://HOST:PORT[,nats://...].
	Store string
	// Log is how the service logs.
	Log LogConfig
	// Engine holds the engine's limits the flags set; Run fills in the rest.
	Engine actors.Config
	// Verify is how an intent's authorship is checked.
	Verify crypto.VerifyOptions
	// API is the HTTP server's settings that flags give.
	API APIConfig
	// Evidence chooses where evidence comes from.
	Evidence EvidenceConfig
	// Pebble holds the Pebble store's settings that flags give.
	Pebble persistence.Options
	// Nats holds the NATS store's connection and layout, and the embedded server's.
	Nats NATSConfig
	// Cluster makes this node a member of a cluster (docs/cluster.md).
	Cluster ClusterConfig
	// Tlog is the transparency log of outcomes.
	Tlog TlogConfig
	// SigningKey is the receipt key file; empty: signing.key in DataDir, made on first start.
	SigningKey string
	// RotateSigningKey changes the key on purpose: a missing signing.key is made anew
	// in a store that has issued receipts under the old one, and a transparency log
	// signed by another key goes on under this one.
	RotateSigningKey bool
	// Pprof is the address of a listener serving net/http/pprof; empty: none.
	Pprof string
	// Traces is where spans go; traces are off without an endpoint.
	Traces TraceConfig
	// Webhooks are the deliveries of outcomes to registered endpoints.
	Webhooks WebhookConfig
}

// WebhookConfig is how outcomes are pushed to webhook endpoints (docs/webhooks.md).
type WebhookConfig struct {
	// AllowPrivate lets endpoints be on loopback, private and link-local addresses.
	AllowPrivate bool
	// Timeout bounds one delivery attempt.
	Timeout time.Duration
	// Schedule is the delay before each attempt of an event, as
	// webhook.ParseSchedule reads it.
	Schedule string
	// Max bounds the endpoints kept.
	Max int
}

// LogConfig is how the service logs.
type LogConfig struct {
	Format string // text or json
	Level  string // debug, info, warn or error
	// Requests logs every request at info, not only those answered with an error.
	Requests bool
}

// APIConfig is the HTTP server's settings that flags give; the rest of
// intenthttp.Options is Run's.
type APIConfig struct {
	// MaxBody is the largest request body, in bytes.
	MaxBody int64
	// Limits are the caller limits beyond the body size.
	Limits intenthttp.Limits
	// Tokens is the file of bearer token hashes and roles; empty: no caller authentication.
	Tokens string
	// CORSOrigins are the origins whose browser pages may call the API, in the form
	// browsers send them; empty: CORS off.
	CORSOrigins []string
	// UI serves the browser console under /ui/.
	UI bool
	// SMTSolver is the solver of the policy analysis: a name or path, "" to look for
	// cvc5 then z3, "none" for no analysis.
	SMTSolver string
	// ShutdownTimeout bounds how long a shutdown waits for requests in flight.
	ShutdownTimeout time.Duration
	// ShutdownDelay is how long GET /readyz answers 503 before the listener closes.
	ShutdownDelay time.Duration
	// TLS are the PEM files of the API's TLS; no certificate: plain HTTP.
	TLS intenthttp.TLSFiles
}

// EvidenceConfig chooses the extractors (docs/evidence.md).
type EvidenceConfig struct {
	Catalog         string // catalog file; empty: the embedded demo catalog
	ExtractorURL    string // base URL of an evidence service, made the default
	ExtractorConfig string // file of rules choosing an extractor per solution
}

// NATSConfig is the NATS store's connection and layout (natsstore.Options, whose
// URLs Run fills from Store), and the embedded server's.
type NATSConfig struct {
	natsstore.Options
	// TokenFile is the file the token was read from; empty: none. Token is the token
	// itself once ParseFlags has read it: from --nats-token, the file of
	// --nats-token @FILE, or TokenFile.
	TokenFile string
	// Embed runs a NATS server with JetStream in DataDir inside intentd and keeps the
	// store on it; EmbedConfig is that server's configuration file (cluster, ports).
	Embed       bool
	EmbedConfig string
}

// ClusterConfig makes this node a member of a cluster.
type ClusterConfig struct {
	// Bind, when set, turns cluster mode on: the HOST:PORT this node listens on for the
	// other members, and where they reach it unless Advertise is set. It needs a NATS
	// store.
	Bind string
	// Advertise is the HOST:PORT the other members reach this node at, when it is not
	// Bind: a name the node's certificate carries while it binds an address.
	Advertise string
	// Name keeps clusters apart on one NATS.
	Name string
	// TLS are the PEM files of the members' mutual TLS: this member's certificate and
	// key, and the cluster's CA.
	TLS clustertls.Files
	// Insecure lets the members speak plaintext on an address beyond loopback.
	Insecure bool
	// MaxGrains bounds the intents this member holds for commands; 0: no bound.
	MaxGrains int
	// ExitOnFence stops the process when the others dropped this member, instead of
	// rejoining under a new id.
	ExitOnFence bool
}

// TlogConfig is the transparency log of outcomes, served under /log/.
type TlogConfig struct {
	Enabled bool
	Dir     string // the log's folder; empty: tlog in DataDir
	Origin  string // the origin line of its checkpoints; empty: tlog.DefaultOrigin
	// Witnesses is the file of the C2SP tlog-policy whose witnesses cosign the
	// checkpoints; empty: none.
	Witnesses string
	// WitnessInterval is how often the witnesses are asked, when the log grew.
	WitnessInterval time.Duration
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
	c.Engine = def
	fs := flag.NewFlagSet("intentd", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	fs.StringVar(&c.DataDir, "data", "./data", "folder of the Pebble store; created when missing")
	fs.BoolVar(&c.Verify.AllowUnsigned, "allow-unsigned", false, "accept intents whose authorship is \"Unsigned\"")
	fs.StringVar(&c.Verify.PasskeyOrigin, "passkey-origin", "", "the only origin a passkey's client data may name (empty: not checked)")
	fs.Var(&listFlag{vals: &c.Verify.PasskeyTopOrigins}, "passkey-top-origin", "a site that may frame the --passkey-origin page when it asks for a signature (repeatable, or a comma list); without it an assertion made in a cross-origin frame is refused")
	fs.StringVar(&c.Verify.PasskeyRPID, "passkey-rp-id", "", "the relying party id a passkey's authenticator data must carry (empty: not checked)")
	fs.BoolVar(&c.Verify.PasskeyRequireUV, "passkey-require-uv", false, "refuse a passkey assertion whose authenticator data lacks the user-verified flag (a PIN or biometric), as authorship_invalid")
	fs.DurationVar(&c.Engine.IntentTTL, "intent-ttl", def.IntentTTL, "how long an intent waits for a proposal before it expires")
	fs.IntVar(&c.Engine.MaxProving, "max-proving", def.MaxProving, "proposals proved at once")
	fs.IntVar(&c.Engine.MaxPreviewing, "max-previewing", def.MaxPreviewing, "previews decided at once, a share beside --max-proving; previews are refused (503) while proposals wait")
	fs.IntVar(&c.Engine.MaxPreviewsPerIntent, "max-previews", def.MaxPreviewsPerIntent, "previews one intent may have (429 past it), counted in memory until the intent ends or the service restarts; 0: no bound")
	fs.IntVar(&c.Engine.ProvingQueue, "proving-queue", def.ProvingQueue, "accepted proposals that may wait for a proving slot; 0: none wait, a full service answers 503")
	fs.StringVar(&c.Evidence.Catalog, "catalog", "", "catalog file of evidence by solution (JSON); empty: the embedded demo catalog")
	fs.StringVar(&c.Evidence.ExtractorURL, "extractor-url", "", "base URL of an evidence service; makes the http extractor (POST BASE/extract) the default")
	fs.StringVar(&c.Evidence.ExtractorConfig, "extractor-config", "", "JSON file of rules choosing an extractor per solution (see docs/evidence.md)")
	fs.Uint64Var(&c.Engine.EventRetention, "event-retention", def.EventRetention, "newest events kept for replay")
	fs.DurationVar(&c.Engine.EventRetentionAge, "event-retention-age", def.EventRetentionAge, "events older than this are dropped")
	fs.Int64Var(&c.API.MaxBody, "max-body", intenthttp.DefaultMaxBodyBytes, "largest request body in bytes")
	fs.StringVar(&c.Log.Format, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.Log.Level, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&c.Log.Requests, "log-requests", false, "log a line for every request at info; without it, only requests answered with an error are (the others at debug)")
	fs.StringVar(&c.SigningKey, "signing-key", "", "file of the Ed25519 key receipts are signed with (Base58 seed, mode 0600); empty: signing.key in the data folder, created on first start")
	fs.Int64Var(&c.Pebble.MinFreeBytes, "min-free-disk", persistence.DefaultMinFreeBytes, "free bytes of the data folder's disk below which writes are refused with 503 storage_full while reads go on (0: refused only once a write met the full disk, which the store's reserve lets complete)")
	fs.BoolVar(&c.Pebble.AcceptDataLoss, "accept-data-loss", false, "start even though the store's write-ahead log lost acknowledged writes (damaged after it was written), or its mark (intentd.mark) is damaged or missing; without it such a store is refused")
	fs.BoolVar(&c.RotateSigningKey, "rotate-signing-key", false, "change the signing key on purpose: when signing.key is missing from a data folder whose store has issued receipts, make a new key instead of refusing to start; when the transparency log was signed by another key, go on under this one")
	fs.DurationVar(&c.API.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a shutdown waits for requests in flight")
	fs.DurationVar(&c.API.ShutdownDelay, "shutdown-delay", 0, "how long a shutdown answers 503 on /readyz, still serving, before it stops accepting connections")
	fs.Var(&listFlag{vals: &c.API.CORSOrigins}, "cors-origin", "an origin (scheme://host[:port]) whose browser pages may call the API (repeatable, or a comma list); * allows every origin on the routes that need no token (all of them without --tokens); empty: CORS off")
	fs.StringVar(&c.API.Tokens, "tokens", "", "file of bearer token hashes and their roles (see docs/operating.md); empty: no caller authentication")
	fs.IntVar(&c.API.Limits.MaxSolutionBytes, "max-solution", intenthttp.DefaultMaxSolutionBytes, "largest proposal solution in bytes (at most --max-body, and at most 1048576); by default 16384, or --max-body when that is smaller")
	fs.IntVar(&c.API.Limits.MaxAttrs, "max-attrs", intenthttp.DefaultMaxAttrs, "most fields in an intent's attrs")
	fs.IntVar(&c.API.Limits.MaxSetElements, "max-set", intenthttp.DefaultMaxSetElements, "most elements in one set value of an intent's attrs")
	fs.IntVar(&c.API.Limits.MaxStringBytes, "max-string", intenthttp.DefaultMaxStringBytes, "largest string value of an intent's attrs, in bytes")
	fs.IntVar(&c.Engine.MaxSubscribers, "max-subscribers", def.MaxSubscribers, "most clients of the event stream at once (503 past it)")
	fs.StringVar(&c.Store, "store", "pebble", "where state is kept: pebble (in --data) or NATS JetStream servers, nats://HOST:PORT[,nats://...]")
	fs.StringVar(&c.Nats.Creds, "nats-creds", "", "NATS credentials file (JWT and seed)")
	fs.StringVar(&c.Nats.Token, "nats-token", "", "NATS token, or @FILE to read it from FILE; prefer --nats-token-file or INTENTD_NATS_TOKEN, since a command line is shown to every user of the host")
	fs.StringVar(&c.Nats.TokenFile, "nats-token-file", "", "file holding the NATS token on one line (mode 0600 or 0400), instead of --nats-token")
	fs.StringVar(&c.Nats.NKey, "nats-nkey", "", "NATS NKey user seed file (mode 0600)")
	fs.StringVar(&c.Nats.TLSCA, "nats-tls-ca", "", "PEM file of the CAs that sign the NATS servers' certificates")
	fs.StringVar(&c.Nats.Prefix, "nats-prefix", "intentd", "first token of the store's subjects; the stream is named for it")
	fs.IntVar(&c.Nats.Replicas, "nats-replicas", 0, "replicas of the NATS stream; 0: 3 when the cluster has 3 servers or more, else 1")
	fs.DurationVar(&c.Nats.FollowWindow, "nats-follow-window", defaultFollowWindow, "how long this node lets the stream's events gather before it takes them, once one has come, while someone on this node waits for them: less CPU per record on a busy stream, each event later to its subscribers by up to this; the index, and the events while only the transparency log reads them, gather ten times as long, at most 500ms; 0 takes each record as it comes")
	fs.BoolVar(&c.Nats.Embed, "nats-embed", false, "run a NATS server with JetStream in --data inside intentd and keep state on it; it admits only intentd, with the NKey made in --data/nats/intentd.nk")
	fs.StringVar(&c.Nats.EmbedConfig, "nats-embed-config", "", "nats-server configuration file of the embedded server (cluster, ports, accounts); one that defines client authorization needs --nats-nkey, --nats-creds or --nats-token")
	c.clusterFlags(fs)
	c.tlsFlags(fs)
	fs.BoolVar(&c.API.UI, "ui", true, "serve the browser console under /ui/ (see docs/console.md); --ui=false leaves /ui/ unserved")
	fs.StringVar(&c.API.SMTSolver, "smt-solver", "", "the SMT solver of POST /policy-analysis: cvc5 or z3, a name on PATH or a path; empty: cvc5, else z3, else no analysis; none: no analysis")
	fs.StringVar(&c.Pprof, "pprof", "", "address (host:port) of a second listener serving the Go profiler, net/http/pprof, with no authentication: keep it on the loopback interface; empty: off")
	fs.BoolVar(&c.Webhooks.AllowPrivate, "webhook-allow-private", false, "let webhook endpoints be on loopback, private and link-local addresses (tests, closed networks)")
	fs.DurationVar(&c.Webhooks.Timeout, "webhook-timeout", 10*time.Second, "time limit of one webhook delivery attempt, connection to answer")
	fs.StringVar(&c.Webhooks.Schedule, "webhook-retry-schedule", "0s,5s,5m,30m,2h,5h,10h,10h", "delay before each attempt of a webhook event; an endpoint whose event fails the last is disabled")
	fs.IntVar(&c.Webhooks.Max, "webhook-max", 100, "most webhook endpoints kept")
	fs.BoolVar(&c.Tlog.Enabled, "tlog", true, "keep the transparency log of outcomes and serve it under /log/ (docs/proofs.md); false: keep none, and in a cluster serve the log of a member that keeps one (docs/cluster.md)")
	fs.StringVar(&c.Tlog.Dir, "tlog-dir", "", "folder of the transparency log's leaves and tree; empty: tlog in --data")
	fs.StringVar(&c.Tlog.Origin, "tlog-origin", "", "origin line of the log's checkpoints, a URL without scheme (log.example.com/intentd), the same on every member of a cluster and fixed once the log has leaves; empty: intentd/<receipt key id>")
	fs.StringVar(&c.Tlog.Witnesses, "tlog-witnesses", "", "file of the witnesses that cosign the log's checkpoints and their quorum, in the C2SP tlog-policy format (docs/proofs.md); empty: no witness")
	fs.DurationVar(&c.Tlog.WitnessInterval, "tlog-witness-interval", tlog.DefaultWitnessInterval, "how often the witnesses are asked to cosign the newest checkpoint, when the log grew; a proof of a leaf no cosigned checkpoint covers asks at once")
	fs.StringVar(&c.Traces.Endpoint, "otlp-endpoint", "", "base URL of an OpenTelemetry collector's OTLP/HTTP receiver (http://HOST:4318, or https://); spans of requests and of the engine's steps are posted to its /v1/traces (docs/operating.md, Traces); empty: traces off")
	fs.Float64Var(&c.Traces.Sample, "trace-sample", 1, "share of the traces started here that are recorded, 0 to 1, with --otlp-endpoint; a request with a traceparent header is recorded as its caller decided")
	fs.IntVar(&c.API.Limits.MaxPolicySourceBytes, "max-policy-source", intenthttp.DefaultMaxPolicySourceBytes, "largest policy source in bytes (at most 65536; 413 past it)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: intentd [flags]\n       intentd restore [flags] FILE   (a backup taken with intentctl backup, into a new --data or stream; docs/operating.md)\n\nEach flag can also be set by the environment variable INTENTD_<NAME>,\nfor example INTENTD_LISTEN or INTENTD_ALLOW_UNSIGNED; a flag given here wins.\n\n")
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
	// Registered after the environment is read: INTENTD_VERSION, which a deployment
	// may well set for its own use, must not turn a start into a print of the version.
	showVersion := fs.Bool("version", false, "print the version and the revision intentd was built from, and exit")
	// Likewise INTENTD_HEALTHCHECK: a variable must never turn a server into a check.
	healthcheck := fs.Bool("healthcheck", false, "GET /healthz of the server that --listen (or INTENTD_LISTEN) starts, on the loopback interface when it listens on all, and exit 0 if it answers 200, else 1; starts nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Fprintln(m.Stdout, "intentd", buildinfo.Read())
		return flag.ErrHelp // answered, as -h is: exit 0
	}
	if *healthcheck {
		if err := m.healthcheck(); err != nil {
			return err
		}
		return flag.ErrHelp // answered: exit 0
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (every setting is a flag; see -h)", fs.Arg(0))
	}
	if err := m.resolveSecrets(fs); err != nil {
		return err
	}
	// The default solution limit yields to a smaller body limit, which would refuse a
	// longer solution anyway; a limit the operator gives must fit in the body limit.
	_, solutionGiven := m.LookupEnv(envName("max-solution"))
	fs.Visit(func(f *flag.Flag) { solutionGiven = solutionGiven || f.Name == "max-solution" })
	if !solutionGiven && c.API.MaxBody > 0 && int64(c.API.Limits.MaxSolutionBytes) > c.API.MaxBody {
		c.API.Limits.MaxSolutionBytes = int(c.API.MaxBody)
	}
	return c.validate()
}

// secretFlag is a flag whose value is itself a secret, with its twin NAME-file, which
// names a file holding it.
type secretFlag struct {
	name        string
	value, file *string
}

// secretFlags are the flags of c whose value is a secret. Each also takes a file, as
// NAME-file or as NAME @FILE, and /debug/pprof/cmdline shows its value redacted.
func (c *Config) secretFlags() []secretFlag {
	return []secretFlag{{"nats-token", &c.Nats.Token, &c.Nats.TokenFile}}
}

// resolveSecrets reads each secret given by file, so that Config holds the secrets
// themselves. A flag and its twin are one setting: either given on the command line
// wins over the environment's variables of both, as a flag wins over its variable;
// both given on one of the two is refused. The secret flags given on the command line
// with the secret itself are kept in cmdlineSecrets, for Run to warn of.
func (m *Main) resolveSecrets(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	m.cmdlineSecrets = nil
	for _, s := range m.Config.secretFlags() {
		switch value, file := given[s.name], given[s.name+"-file"]; {
		case value && !file:
			*s.file = ""
		case file && !value:
			*s.value = ""
		}
		if given[s.name] && *s.value != "" && !strings.HasPrefix(*s.value, "@") {
			m.cmdlineSecrets = append(m.cmdlineSecrets, s.name)
		}
		v, err := secretfile.Resolve(s.name, *s.value, *s.file)
		if err != nil {
			return err
		}
		*s.value = v
	}
	return nil
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
	if _, err := webhook.ParseSchedule(c.Webhooks.Schedule); err != nil {
		return fmt.Errorf("--webhook-retry-schedule: %w", err)
	}
	switch {
	case c.Log.Format != "text" && c.Log.Format != "json":
		return fmt.Errorf("--log-format %q: want text or json", c.Log.Format)
	case c.Engine.MaxProving < 1:
		return fmt.Errorf("--max-proving %d: want at least 1", c.Engine.MaxProving)
	case c.Engine.MaxPreviewing < 1:
		return fmt.Errorf("--max-previewing %d: want at least 1", c.Engine.MaxPreviewing)
	case c.Engine.MaxPreviewsPerIntent < 0:
		return fmt.Errorf("--max-previews %d: want 0 (no bound) or more", c.Engine.MaxPreviewsPerIntent)
	case c.Engine.ProvingQueue < 0:
		return fmt.Errorf("--proving-queue %d: want 0 or more", c.Engine.ProvingQueue)
	case c.Engine.IntentTTL <= 0 || c.Engine.IntentTTL > maxIntentTTL:
		return fmt.Errorf("--intent-ttl %s: want a positive duration of at most %s (100 years)", c.Engine.IntentTTL, maxIntentTTL)
	case c.Engine.EventRetention < 1:
		return fmt.Errorf("--event-retention %d: want at least 1", c.Engine.EventRetention)
	case c.Engine.EventRetentionAge <= 0:
		return fmt.Errorf("--event-retention-age %s: want a positive duration", c.Engine.EventRetentionAge)
	case c.API.MaxBody < 1:
		return fmt.Errorf("--max-body %d: want at least 1", c.API.MaxBody)
	case c.Webhooks.Timeout <= 0:
		return fmt.Errorf("--webhook-timeout %s: want a positive duration", c.Webhooks.Timeout)
	case c.Webhooks.Max < 1:
		return fmt.Errorf("--webhook-max %d: want at least 1", c.Webhooks.Max)
	case c.Pebble.MinFreeBytes < 0:
		return fmt.Errorf("--min-free-disk %d: want 0 or more bytes", c.Pebble.MinFreeBytes)
	case c.DataDir == "":
		return errors.New("--data: want a folder")
	case c.API.ShutdownTimeout <= 0:
		return fmt.Errorf("--shutdown-timeout %s: want a positive duration", c.API.ShutdownTimeout)
	case c.API.ShutdownDelay < 0:
		return fmt.Errorf("--shutdown-delay %s: want 0 or a positive duration", c.API.ShutdownDelay)
	case c.API.Limits.MaxSolutionBytes < 1 || int64(c.API.Limits.MaxSolutionBytes) > c.API.MaxBody || c.API.Limits.MaxSolutionBytes > intentd.MaxSolutionBytes:
		return fmt.Errorf("--max-solution %d: want 1 to %d (at most --max-body, %d, and at most the engine's limit, %d)",
			c.API.Limits.MaxSolutionBytes, min(c.API.MaxBody, intentd.MaxSolutionBytes), c.API.MaxBody, intentd.MaxSolutionBytes)
	case c.API.Limits.MaxAttrs < 1:
		return fmt.Errorf("--max-attrs %d: want at least 1", c.API.Limits.MaxAttrs)
	case c.API.Limits.MaxSetElements < 1:
		return fmt.Errorf("--max-set %d: want at least 1", c.API.Limits.MaxSetElements)
	case c.API.Limits.MaxStringBytes < 1:
		return fmt.Errorf("--max-string %d: want at least 1", c.API.Limits.MaxStringBytes)
	case c.Engine.MaxSubscribers < 1:
		return fmt.Errorf("--max-subscribers %d: want at least 1", c.Engine.MaxSubscribers)
	case c.API.Limits.MaxPolicySourceBytes < 1 || c.API.Limits.MaxPolicySourceBytes > policy.MaxSourceBytes:
		return fmt.Errorf("--max-policy-source %d: want 1 to %d (the policy language's limit)", c.API.Limits.MaxPolicySourceBytes, policy.MaxSourceBytes)
	}
	if _, err := parseLevel(c.Log.Level); err != nil {
		return err
	}
	if err := c.Traces.validate(); err != nil {
		return err
	}
	if err := c.validateTLS(); err != nil {
		return err
	}
	if err := c.Tlog.validate(); err != nil {
		return err
	}
	for i, o := range c.API.CORSOrigins {
		norm, err := intenthttp.ParseCORSOrigin(o)
		if err != nil {
			return fmt.Errorf("--cors-origin: %v", err)
		}
		c.API.CORSOrigins[i] = norm
	}
	return c.validateStore()
}

func (c *Config) validateStore() error {
	nats := c.Store != "pebble"
	if nats {
		for _, u := range strings.Split(c.Store, ",") {
			if !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
				return fmt.Errorf("--store %q: want pebble or nats://HOST:PORT[,nats://HOST:PORT...]", redact.URLs(c.Store))
			}
		}
	}
	switch {
	case nats && c.Nats.Embed:
		return errors.New("--store names NATS servers and --nats-embed runs one: give one of them")
	case c.Nats.EmbedConfig != "" && !c.Nats.Embed:
		return errors.New("--nats-embed-config without --nats-embed")
	case c.Nats.Replicas < 0:
		return fmt.Errorf("--nats-replicas %d: want 0 (automatic) or more", c.Nats.Replicas)
	case c.Nats.FollowWindow < 0 || c.Nats.FollowWindow > natsstore.MaxFollowWindow:
		return fmt.Errorf("--nats-follow-window %v: want 0 to %v", c.Nats.FollowWindow, natsstore.MaxFollowWindow)
	case len(c.natsCredentials()) > 1:
		return fmt.Errorf("%s: give one of them", strings.Join(c.natsCredentials(), " and "))
	case c.Cluster.Bind != "" && !nats && !c.Nats.Embed:
		return errors.New("--cluster-bind needs a store every member shares: --store nats://... or --nats-embed")
	case !clusterName.MatchString(c.Cluster.Name):
		return fmt.Errorf("--cluster-name %q: letters, digits, - and _ only", c.Cluster.Name)
	}
	return c.validateCluster()
}

// natsCredentials names the flags of a NATS credential that are given.
func (c *Config) natsCredentials() []string {
	var given []string
	token := "--nats-token"
	if c.Nats.TokenFile != "" {
		token = "--nats-token-file" // the flag the operator gave
	}
	for _, f := range []struct{ name, val string }{{"--nats-creds", c.Nats.Creds}, {token, c.Nats.Token}, {"--nats-nkey", c.Nats.NKey}} {
		if f.val != "" {
			given = append(given, f.name)
		}
	}
	return given
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// validate checks the log's origin and witness settings. An origin is a URL without its
// scheme (log.example.com/intentd), as C2SP checkpoints name logs; the default one,
// intentd/<key id>, has the same form.
func (t *TlogConfig) validate() error {
	if t.Origin != "" {
		if strings.Contains(t.Origin, "://") {
			return fmt.Errorf("--tlog-origin %q: write it without the scheme, as %s", t.Origin, t.Origin[strings.Index(t.Origin, "://")+3:])
		}
		if err := iproof.CheckOrigin(t.Origin); err != nil {
			return fmt.Errorf("--tlog-origin: %v", err)
		}
		u, err := url.Parse("https://" + t.Origin)
		if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(t.Origin, "/") {
			return fmt.Errorf("--tlog-origin %q: want a host and path without scheme, query or trailing slash, as log.example.com/intentd", t.Origin)
		}
	}
	if t.Witnesses != "" && !t.Enabled {
		return errors.New("--tlog-witnesses: the witnesses cosign the transparency log, which --tlog=false turns off")
	}
	if t.WitnessInterval < time.Second {
		return fmt.Errorf("--tlog-witness-interval %s: want 1s or more", t.WitnessInterval)
	}
	return nil
}
