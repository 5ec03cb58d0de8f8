package main

import (
	"fmt"
	"net"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/internal/buildinfo"
	"github.com/intentd/intentd/tlog"
)

// serve opens the listener and serves the API on the engine (through the transparency
// log when there is one), and the profiler's listener when --pprof asks for it.
func (m *Main) serve(tokens *intenthttp.Tokens, key *crypto.SigningKey, metrics *intenthttp.Metrics) error {
	c := m.Config
	opts := m.HTTP
	opts.Logger = m.logger.With("component", "http")
	opts.MaxBodyBytes = c.API.MaxBody
	opts.Limits = c.API.Limits
	opts.Tokens = tokens
	opts.TLS = m.apiTLS
	opts.CORSOrigins = c.API.CORSOrigins
	opts.LogRequests = c.Log.Requests
	opts.Console = c.API.UI
	opts.Metrics = metrics
	opts.TracerProvider, opts.Propagator = m.tracing()
	opts.Ready = m.engine.Ready()
	if w, ok := m.store.(interface{ Writable() error }); ok {
		opts.Writable = w.Writable
	}
	build := buildinfo.Read()
	opts.Info = intentd.Info{
		Version:           build.Version,
		Revision:          build.Revision,
		UnsignedPermitted: c.Verify.AllowUnsigned,
		IntentTTLSeconds:  int64(c.Engine.IntentTTL / time.Second),
		EventRetention:    c.Engine.EventRetention,
		// The engine enforces it; its default is the engine's (actors.DefaultConfig).
		MaxSubscribers:       c.Engine.MaxSubscribers,
		MaxPreviewsPerIntent: c.Engine.MaxPreviewsPerIntent,
		PublicKey:            crypto.EncodeBase58(key.PublicKey()),
		KeyID:                key.ID(),
	}
	opts.Backup = m.backup
	if c.Cluster.Bind != "" {
		opts.Info.Cluster = &intentd.ClusterInfo{Name: c.Cluster.Name}
		opts.ClusterMembers = m.engine.ClusterMembers
	}
	if opts.Analyzer == nil {
		opts.Analyzer = m.analyzer(c.API.SMTSolver)
	}
	if m.webhooks != nil {
		opts.Webhooks = m.webhooks
		opts.Info.WebhookPublicKey = m.webhooks.PublicKey()
		m.runWebhooks()
	}
	var served intentd.Engine = m.engine
	if m.tlog != nil {
		m.runTlog()
		opts.Log = m.tlog.Reader()
		if c.Tlog.Witnesses != "" {
			opts.Witnesses = m.tlog
		}
		opts.Info.LogOrigin, opts.Info.LogVerifierKey = m.tlog.Origin(), m.tlog.VerifierKey()
		served = loggedEngine{m.engine, m.tlog}
	} else if c.Cluster.Bind != "" {
		// A member that keeps no log serves the cluster's, read from a member that
		// keeps one: the same checkpoints and tiles, under the same origin and key.
		origin := c.Tlog.Origin
		if origin == "" {
			origin = tlog.DefaultOrigin(key)
		}
		vkey, err := tlog.VerifierKey(origin, key)
		if err != nil {
			return fmt.Errorf("--tlog-origin: %w", err)
		}
		opts.Log = &originChecked{LogReader: m.engine.ClusterLog(), origin: origin, log: m.logger}
		opts.Info.LogOrigin, opts.Info.LogVerifierKey = origin, vkey
	}
	m.server = intenthttp.NewServer(served, opts)
	var err error
	m.ln, err = net.Listen("tcp", c.Listen)
	if err != nil {
		return err
	}
	if c.Pprof != "" {
		if err := m.startPprof(c.Pprof); err != nil {
			m.ln.Close()
			return err
		}
	}
	m.served = make(chan struct{})
	go func() {
		m.serveErr = m.server.Serve(m.ln)
		close(m.served)
	}()
	return nil
}

// announce logs that the service listens, warns of what an operator should change,
// and prints the banner.
func (m *Main) announce(tokens *intenthttp.Tokens) {
	c := m.Config
	clientCerts := c.API.TLS.ClientCA != ""
	attrs := []any{"url", m.URL(), "data", c.DataDir, "unsigned_permitted", c.Verify.AllowUnsigned, "auth_required", tokens != nil || clientCerts}
	if m.apiTLS != nil {
		attrs = append(attrs, "tls_cert", c.API.TLS.Cert, "tls_not_after", m.apiTLS.NotAfter(), "client_certificates", clientCerts)
	}
	m.logger.Info("listening", attrs...)
	for _, name := range m.cmdlineSecrets {
		m.logger.Warn("a secret given on the command line is shown to every user of this host (ps, /proc/PID/cmdline); give it by file or by environment instead",
			"flag", "--"+name, "file_flag", "--"+name+"-file", "env", envName(name))
	}
	if tokens == nil && !clientCerts && !loopback(m.ln.Addr()) {
		m.logger.Warn("no caller authentication (--tokens) while listening beyond the loopback interface: anyone who reaches this address can store policies and intents",
			"listen", c.Listen)
	}
	if m.logw != nil {
		_ = m.logw.Flush() // the lines so far, before the banner
	}
	if c.Log.Format == "text" {
		fmt.Fprintf(m.Stderr, "\nintentd is listening on %[1]s\n  curl -s %[1]s/info\n  curl -N %[1]s/events          # the outcome stream\nA walk-through with curl: docs/api.md\n\n", m.URL())
	}
}
