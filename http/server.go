package http

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/intentd/intentd"
)

// APIVersion is the version of the interface description the routes implement.
const APIVersion = "0.10.0"

// Options configure a Server. Zero values take the defaults given on each field.
type Options struct {
	// Logger receives request and error logs; nil discards them.
	Logger *slog.Logger
	// LogRequests logs every request at info. Without it a request answered with an
	// error is logged at info and one answered otherwise at debug: a line for each
	// success cost a busy server as much as the rest of the request's bookkeeping.
	LogRequests bool
	// MaxBodyBytes limits a request body; DefaultMaxBodyBytes by default.
	MaxBodyBytes int64
	// Heartbeat is how long an event stream may be silent before a comment line is
	// sent; 15 s by default, below the idle time-out of common proxies (often 30 or 60 s).
	Heartbeat time.Duration
	// Retry is the reconnection delay advised to event stream clients; 3 s by default.
	Retry time.Duration
	// FlushWindow is the longest an event stream that has caught up waits after a
	// write before it writes again, so that the events of that time share one write
	// and one flush: to a hundred events a second, a write per event costs each
	// connection far more than the events themselves. How long a stream waits grows
	// with the number of open streams (streamWriteShare each), so that a few streams
	// get every event at once and thousands together make about 13,000 writes a
	// second; the first event after a quiet spell goes out at once. 200 ms by
	// default (reached at 2,667 streams): at 10,000 streams of 100 events a second,
	// 150 ms made 67,000 writes a second, and with them the server's CPU and a load
	// generator's on two cores outgrew the cores, and the lag with them (p99 287 to
	// 575 ms); 200 ms made 50,000, about 12 % less CPU a delivery and a lag p99 of
	// 225 to 271 ms (docs/benchmarks.md). Negative: write every event as it comes.
	FlushWindow time.Duration
	// ReadHeaderTimeout bounds reading a request's headers; 10 s by default.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included; 30 s by default.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response; on the event stream it bounds each
	// write instead, so that a client that stops reading is let go. 30 s by default.
	WriteTimeout time.Duration
	// IdleTimeout bounds how long a kept-alive connection waits for its next request;
	// 2 minutes by default.
	IdleTimeout time.Duration
	// Info is what GET /info reports beside the interface version and the limits.
	Info intentd.Info
	// Analyzer analyses policies for POST /policy-analysis; nil answers that route
	// 503 analysis_unavailable.
	Analyzer intentd.PolicyAnalyzer
	// Webhooks keeps the webhook endpoints of /webhooks; nil answers those routes
	// 503 webhooks_unavailable.
	Webhooks intentd.WebhookManager
	// Limits bound what a request may carry beyond its body size; zero fields take
	// their defaults.
	Limits Limits
	// Tokens, when set, are the bearer tokens every request but the health checks
	// must carry, with the role its route needs; nil: no token is taken.
	Tokens *Tokens
	// TLS, when set, makes Serve serve TLS (HTTP/2 and HTTP/1.1) with its material of
	// the moment; nil: plain HTTP. When it names a client CA, a client certificate
	// that chains to it authenticates its caller, beside Tokens (clientcert.go), and
	// every request but the health checks needs a caller even without Tokens.
	TLS *TLS
	// Metrics are served by GET /metrics; nil: a new set.
	Metrics *Metrics
	// Ready is closed once the service may take traffic (store open, start-up
	// recovery over), as GET /readyz reports; nil: ready at once.
	Ready <-chan struct{}
	// Writable says why the store refuses writes (a full disk: an error wrapping
	// intentd.ErrStorageFull; its data missing or changed: an *intentd.Error coded
	// store_missing or store_changed; its servers gone: any other), or nil while it
	// takes them, as GET /readyz reports; nil: always writable.
	Writable func() error
	// ClusterMembers, in cluster mode, gives the members this node sees, for GET /info
	// (whose Info.Cluster names the cluster).
	ClusterMembers func() []string
	// CORSOrigins are the origins (scheme://host[:port], as ParseCORSOrigin takes them)
	// whose pages may call the API from a browser, or AnyOrigin for every origin on the
	// routes that need no token; nil: CORS off, and no answer carries its headers.
	CORSOrigins []string
	// Log is the transparency log of outcomes, served under /log/ and asked for the
	// inclusion each proof bundle carries: this node's own (tlog.Log.Reader), or in a
	// cluster, for a member that keeps none, a member's that keeps one
	// (actors.Engine.ClusterLog). Nil: no log, and /log/ answers 404.
	Log intentd.LogReader
	// Witnesses is the state of the log's witnesses, for GET /log/witnesses, GET
	// /readyz and the metrics; nil: the log has none, and GET /log/witnesses answers
	// 404.
	Witnesses LogWitnesses
	// Backup takes an online backup of the store for POST /admin/backup; nil: the route
	// answers 404.
	Backup func(ctx context.Context) (Backup, error)
	// Console serves the browser console under /ui/ (docs/console.md); false: no /ui/
	// route, and those paths are answered as any path no route serves.
	Console bool
	// TracerProvider makes a span of every request (trace.go); nil: no spans, and no
	// cost to a request beyond a nil check.
	TracerProvider trace.TracerProvider
	// Propagator reads the trace context a caller sends (propagation.TraceContext for
	// W3C's traceparent), which a request's span continues; nil: none is read.
	Propagator propagation.TextMapPropagator
}

func (o *Options) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Heartbeat, 15*time.Second)
	def(&o.Retry, 3*time.Second)
	if o.FlushWindow == 0 {
		o.FlushWindow = 200 * time.Millisecond
	}
	def(&o.ReadHeaderTimeout, 10*time.Second)
	def(&o.ReadTimeout, 30*time.Second)
	def(&o.WriteTimeout, 30*time.Second)
	def(&o.IdleTimeout, 2*time.Minute)
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	o.Limits.setDefaults()
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
}

// Server serves the API over an intentd.Engine. It is an http.Handler, and Serve and Shutdown
// run it on a listener with the time-outs of its Options.
type Server struct {
	engine  intentd.Engine
	opts    Options
	log     *slog.Logger
	router  *httprouter.Router
	srv     *http.Server
	metrics *Metrics
	cors    corsOrigins
	// info is the body of GET /info, and exposition the handler of GET /metrics.
	info       intentd.Info
	exposition http.Handler
	// mcp serves POST /mcp, the Model Context Protocol endpoint for agents.
	mcp http.Handler
	// draining makes GET /readyz answer 503; set by Drain and Shutdown.
	draining atomic.Bool

	// streams is cancelled by Shutdown to end the event streams, which would
	// otherwise hold Shutdown until its deadline.
	streams    context.Context
	endStreams context.CancelFunc
	shutOnce   sync.Once
	// frames holds the SSE frames of recent events, encoded once for all the streams
	// that send them.
	frames frameCache
	// openStreams counts the event streams being served; it sets how long each waits
	// between writes.
	openStreams atomic.Int64
	// authRequired says that requests but the health checks need a caller: a token or
	// a client certificate.
	authRequired bool
	// tracing makes the requests' spans.
	tracing requestTracing
	// backingUp is set while a backup is taken (backup.go).
	backingUp atomic.Bool
}

// NewServer returns a server over e.
func NewServer(e intentd.Engine, opts Options) *Server {
	opts.setDefaults()
	s := &Server{engine: e, opts: opts, log: opts.Logger, metrics: opts.Metrics}
	s.tracing = newRequestTracing(opts)
	s.authRequired = opts.Tokens != nil || (opts.TLS != nil && opts.TLS.ClientCertificates())
	if es, ok := e.(EngineStats); ok {
		s.metrics.watchEngine(es)
	}
	if opts.Witnesses != nil {
		s.metrics.watchWitnesses(opts.Witnesses)
	}
	s.streams, s.endStreams = context.WithCancel(context.Background())
	var errs []error
	if s.cors, errs = newCORSOrigins(opts.CORSOrigins); len(errs) > 0 {
		s.log.Error("CORS origins left out", "err", errors.Join(errs...))
	}

	s.info = s.newInfo()
	s.exposition = s.metrics.newExposition(s.log)
	s.mcp = s.newMCPHandler()
	s.router = s.newRouter()
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	if opts.TLS != nil {
		s.srv.TLSConfig = opts.TLS.config()
		if opts.TLS.ClientCertificates() {
			s.srv.ConnContext = connContext
		}
	}
	return s
}

// ServeHTTP routes a request; the chain its route was registered with checks its
// token, counts it and logs it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.router.ServeHTTP(w, r)
}

// Serve accepts connections on ln until Shutdown; it returns http.ErrServerClosed then.
// With Options.TLS it serves TLS, offering HTTP/2 and HTTP/1.1.
func (s *Server) Serve(ln net.Listener) error {
	if s.srv.TLSConfig != nil {
		// ServeTLS, not a TLS listener given to Serve: it sets up HTTP/2 on the
		// connections whose client chose h2.
		return s.srv.ServeTLS(ln, "", "")
	}
	return s.srv.Serve(ln)
}

// Shutdown stops accepting connections, ends the event streams (their clients
// reconnect to another instance, or to this one when it is back, and lose nothing), and
// waits for the other requests in flight until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.Drain()
	s.shutOnce.Do(s.endStreams)
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// Requests still running past the grace period are cut: the engine is closed
		// next and cannot serve them anyway.
		s.srv.Close()
	}
	return err
}

// statusRecorder remembers the status for the request log. Unwrap lets
// http.ResponseController reach the connection's Flush and deadlines.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// newInfo is what GET /info answers, made once: the options do not change while the
// server runs.
func (s *Server) newInfo() intentd.Info {
	info := s.opts.Info
	info.APIVersion = APIVersion
	info.MaxBodyBytes = s.opts.MaxBodyBytes
	l := s.opts.Limits
	info.MaxSolutionBytes = l.MaxSolutionBytes
	info.MaxAttrs, info.MaxSetElements, info.MaxStringBytes = l.MaxAttrs, l.MaxSetElements, l.MaxStringBytes
	info.MaxPolicySourceBytes = l.MaxPolicySourceBytes
	info.AuthRequired = s.authRequired
	return info
}

func (s *Server) handleInfo(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	info := s.info
	if info.Cluster != nil && s.opts.ClusterMembers != nil {
		members := s.opts.ClusterMembers()
		slices.Sort(members)
		info.Cluster = &intentd.ClusterInfo{Name: info.Cluster.Name, Members: members}
	}
	writeJSON(w, http.StatusOK, info)
}

// handleHealth is a liveness check for load balancers and orchestrators: the server
// answers once start-up recovery is over, since it only listens after that.
func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}
