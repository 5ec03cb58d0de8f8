package http

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/buildinfo"
)

// Metrics are the service's Prometheus metrics, on a registry of their own: the global
// one would collect whatever else the process links in, and two servers in one test
// process would clash on it. One Metrics serves one server.
type Metrics struct {
	reg *prometheus.Registry

	requests       *prometheus.CounterVec
	requestSeconds *prometheus.HistogramVec
	errors         *prometheus.CounterVec
	inFlight       prometheus.Gauge

	transitions     *prometheus.CounterVec
	capacityRefused prometheus.Counter
	extraction      *prometheus.HistogramVec
	proving         *prometheus.HistogramVec
	eventsPublished prometheus.Counter
	storeWrites     *prometheus.HistogramVec
	storeReads      *prometheus.HistogramVec
	remoteCalls     *prometheus.HistogramVec

	engineOnce  sync.Once
	witnessOnce sync.Once
}

// Buckets of the store's latencies: a synced write costs from about 100 µs on a fast
// disk to tens of milliseconds on a slow one, which the default buckets (from 5 ms)
// would not tell apart.
var storeBuckets = prometheus.ExponentialBuckets(0.0001, 2, 16)

// Buckets of extraction and proving, which wait on outside services for up to the
// proving time-out (30 s).
var provingBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// NewMetrics makes the metrics and registers them, with the Go runtime's and the
// process's, on a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "intentd_http_requests_total",
		Help: "HTTP requests answered, by method (other: one the API does not know), route pattern (unmatched: none) and status.",
	}, []string{"method", "route", "status"})
	m.requestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "intentd_http_request_duration_seconds",
		Help:    "Time to answer an HTTP request, by method and route pattern as for intentd_http_requests_total; an event stream counts until it ends.",
		Buckets: prometheus.DefBuckets,
	}, []string{"method", "route"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "intentd_http_errors_total",
		Help: "Error answers by route pattern (unmatched: none) and error code.",
	}, []string{"route", "code"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "intentd_http_requests_in_flight",
		Help: "HTTP requests being answered, event streams included.",
	})
	m.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "intentd_intent_transitions_total",
		Help: "Intents that reached a state, durably: open (created), processing (proposal accepted), success, failure (by failure kind) and expired.",
	}, []string{"state", "failure_kind"})
	m.capacityRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "intentd_proposals_refused_capacity_total",
		Help: "Proposals refused with 503 because every proving slot and queue place was taken.",
	})
	m.extraction = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "intentd_extraction_duration_seconds",
		Help:    "Time to extract a proposal's evidence, by result (ok or error).",
		Buckets: provingBuckets,
	}, []string{"result"})
	m.proving = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "intentd_proving_duration_seconds",
		Help:    "Time to prove a proposal (extraction, evaluation, receipt), by outcome and failure kind.",
		Buckets: provingBuckets,
	}, []string{"outcome", "failure_kind"})
	m.eventsPublished = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "intentd_events_published_total",
		Help: "Events written to the event log and handed to the subscribers.",
	})
	m.storeWrites = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "intentd_store_write_duration_seconds",
		Help:    "Time of a store write by operation, until it is durable: each write waits for its fsync (shared by the writes of one group commit).",
		Buckets: storeBuckets,
	}, []string{"op"})
	m.storeReads = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "intentd_store_read_duration_seconds",
		Help:    "Time of a store read by operation.",
		Buckets: storeBuckets,
	}, []string{"op"})
	m.remoteCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "intentd_cluster_request_duration_seconds",
		Help:    "In a cluster, time of a command sent to the member that owns an intent, all its tries, by result: ok (the member answered) or error (no answer within the budget).",
		Buckets: storeBuckets,
	}, []string{"result"})
	// The build, as a constant 1 with the build in its labels: a query joins it to any
	// other series to tell the members of a cluster that run another build.
	build := buildinfo.Read()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "intentd_build_info",
		Help:        "The build of intentd that runs, in its labels; always 1.",
		ConstLabels: prometheus.Labels{"version": build.Version, "revision": build.Revision, "go_version": build.GoVersion},
	})
	buildInfo.Set(1)
	m.reg.MustRegister(m.requests, m.requestSeconds, m.errors, m.inFlight, m.transitions, m.capacityRefused,
		m.extraction, m.proving, m.eventsPublished, m.storeWrites, m.storeReads, m.remoteCalls, buildInfo,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is where the metrics are registered, for a caller that adds its own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Observer is the engine observer that counts transitions and events, and times
// extraction, proving and the store's calls; give it to the engine's configuration.
func (m *Metrics) Observer() *intentd.Observer {
	return &intentd.Observer{
		StoreCall: func(op string, write bool, d time.Duration) {
			h := m.storeReads
			if write {
				h = m.storeWrites
			}
			h.WithLabelValues(op).Observe(d.Seconds())
		},
		Published: m.eventsPublished.Inc,
		Transition: func(to intentd.State, kind intentd.FailureKind) {
			m.transitions.WithLabelValues(string(to), string(kind)).Inc()
		},
		Extraction: func(d time.Duration, err error) {
			result := "ok"
			if err != nil {
				result = "error"
			}
			m.extraction.WithLabelValues(result).Observe(d.Seconds())
		},
		Proving: func(d time.Duration, state intentd.State, kind intentd.FailureKind) {
			m.proving.WithLabelValues(string(state), string(kind)).Observe(d.Seconds())
		},
		RemoteCall: func(d time.Duration, err error) {
			result := "ok"
			if err != nil {
				result = "error"
			}
			m.remoteCalls.WithLabelValues(result).Observe(d.Seconds())
		},
	}
}

// EngineStats is what the engine gauges read at each scrape; an engine that has it is
// watched (actors.Engine has it).
type EngineStats interface {
	ProvingStats() (intentd.LimiterStats, error)
	Subscribers() int
}

// watchEngine adds the gauges that read the engine at each scrape; only the first
// engine counts.
func (m *Metrics) watchEngine(e EngineStats) {
	m.engineOnce.Do(func() { m.reg.MustRegister(engineCollector{e}) })
}

var (
	descRunning = prometheus.NewDesc("intentd_proving_running",
		"Proposals being proved now.", nil, nil)
	descQueued = prometheus.NewDesc("intentd_proving_queued",
		"Accepted proposals waiting for a proving slot.", nil, nil)
	descReserved = prometheus.NewDesc("intentd_proving_reserved",
		"Proving places held by proposals being written.", nil, nil)
	descSubscribers = prometheus.NewDesc("intentd_event_subscribers",
		"Clients of the event stream.", nil, nil)
	descMembers = prometheus.NewDesc("intentd_cluster_members",
		"In a cluster, the members this node sees, itself included.", nil, nil)
	descActivations = prometheus.NewDesc("intentd_cluster_grain_activations",
		"In a cluster, the intent grains active on this node now.", nil, nil)
	descGrainsRefused = prometheus.NewDesc("intentd_cluster_grains_refused_total",
		"In a cluster, intent grains activated past --cluster-max-grains: each answered its first command 503 and stopped.", nil, nil)
)

// ClusterStats is what the cluster gauges read; an engine in a cluster reports members.
type ClusterStats interface {
	ClusterMembers() []string
	ClusterActivations() int
	ClusterGrainsRefused() uint64
}

// engineCollector asks the engine once per scrape, rather than once per gauge.
type engineCollector struct{ e EngineStats }

func (c engineCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRunning
	ch <- descQueued
	ch <- descReserved
	ch <- descSubscribers
	ch <- descMembers
	ch <- descActivations
	ch <- descGrainsRefused
}

func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	if st, err := c.e.ProvingStats(); err == nil {
		ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, float64(st.Running))
		ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(st.Queued))
		ch <- prometheus.MustNewConstMetric(descReserved, prometheus.GaugeValue, float64(st.Reserved))
	}
	ch <- prometheus.MustNewConstMetric(descSubscribers, prometheus.GaugeValue, float64(c.e.Subscribers()))
	// Outside a cluster the gauges are left out rather than shown as zero members.
	if cs, ok := c.e.(ClusterStats); ok {
		if members := cs.ClusterMembers(); members != nil {
			ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(len(members)))
			ch <- prometheus.MustNewConstMetric(descActivations, prometheus.GaugeValue, float64(cs.ClusterActivations()))
			ch <- prometheus.MustNewConstMetric(descGrainsRefused, prometheus.CounterValue, float64(cs.ClusterGrainsRefused()))
		}
	}
}

// knownMethods are the methods the method label names: those of RFC 9110 and PATCH,
// the ones net/http has constants for. Any other method a request makes up is counted
// as "other", so that a caller cannot add series by sending new ones.
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodConnect: true,
	http.MethodOptions: true, http.MethodTrace: true,
}

// methodLabel is the method label of a request: its method if known, else "other".
func methodLabel(method string) string {
	if knownMethods[method] {
		return method
	}
	return "other"
}

// errorCodes are the code label's values: every code the service answers with. A
// code outside them, which only a bug could produce, is counted as "other" rather than
// trusted to be one of a few.
var errorCodes = map[string]bool{
	intentd.CodeInternal: true, intentd.CodeIntentNotFound: true, intentd.CodePolicyNotFound: true,
	intentd.CodeIntentExists: true, intentd.CodeProposalExists: true, intentd.CodeIntentExpired: true,
	intentd.CodeAuthorshipInvalid: true, intentd.CodeUnsignedNotPermitted: true, intentd.CodeCapacityExceeded: true,
	intentd.CodePolicyInUse: true, intentd.CodePolicyInvalid: true, intentd.CodeInvalidIntent: true,
	intentd.CodeInvalidID: true, intentd.CodeAttrsMismatch: true, intentd.CodeInvalidProposal: true,
	intentd.CodeTooManySubscribers: true, intentd.CodeShuttingDown: true, intentd.CodeCanceled: true,
	intentd.CodeProofNotReady: true, intentd.CodeNoProof: true, intentd.CodeStorageFull: true, intentd.CodeStoreUnavailable: true, intentd.CodeMemberUnavailable: true,
	intentd.CodeStoreMissing: true, intentd.CodeStoreChanged: true, intentd.CodeBackupInProgress: true,
	intentd.CodePreviewLimit: true, intentd.CodeLogNotFound: true,
	intentd.CodeAgentSignatureRequired: true, intentd.CodeAgentSignatureInvalid: true,
	intentd.CodeAgentSignatureReplayed: true, intentd.CodeAgentNotDelegated: true,
	intentd.CodeMandateNotFound: true, intentd.CodeMandateExists: true, intentd.CodeInvalidMandate: true,
	intentd.CodeInvalidPurchase: true, intentd.CodeInvalidRevocation: true, intentd.CodeMandateRevoked: true,
	intentd.CodeMandateExpired: true, intentd.CodeMandateExhausted: true, intentd.CodeRevocationForbidden: true, intentd.CodeMandatePurchase: true,
	intentd.CodeAnalysisUnavailable: true, intentd.CodeAnalysisBusy: true, intentd.CodePolicyUnanalysable: true,
	intentd.CodeWebhookNotFound: true, intentd.CodeInvalidWebhook: true, intentd.CodeWebhookLimit: true, intentd.CodeWebhooksUnavailable: true,
	CodeInvalidJSON: true, CodeUnsupportedContentType: true, CodeBodyTooLarge: true, CodeMethodNotAllowed: true,
	CodeNotFound: true, CodeMalformedAuthorship: true, CodeSupersededShape: true, CodeInvalidLastEventID: true,
	CodeInvalidFilter: true, CodeUnauthorized: true, CodeForbidden: true, CodeLimitExceeded: true,
	CodePolicyTooLarge: true, CodeNotReady: true,
}

// errorCodeLabel is the code label of an error answer: its code if the service has it,
// else "other".
func errorCodeLabel(code string) string {
	if errorCodes[code] {
		return code
	}
	return "other"
}

// requestInfo is what the handlers tell the request log and the metrics of a request
// beyond its status: the error code of an error answer. The chain also records there
// the caller it authenticated, for the handlers that hand it on (/mcp).
type requestInfo struct {
	code   string
	caller caller
}

type requestInfoKey struct{}

func contextWithInfo(ctx context.Context, ri *requestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, ri)
}

// noteErrorCode records the code of an error answer for the request log and metrics.
func noteErrorCode(r *http.Request, code string) {
	if ri, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		ri.code = code
	}
}

// handleMetrics serves the handler NewServer built once: promhttp's handler keeps
// state (its error counting, its encoder pool) that a handler per scrape would lose.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	s.exposition.ServeHTTP(w, r)
}

// newExposition is the handler of GET /metrics. A collector that fails is logged and
// left out; the others are still served. A scraper that asks for OpenMetrics (its
// Accept names application/openmetrics-text) gets it, as the API document says; the
// others get the Prometheus text format.
func (m *Metrics) newExposition(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelError),
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
}

// handleReady answers 200 once the store is open and start-up recovery is over, 503
// while the store refuses writes (its disk full, its servers away, or its data missing or
// changed under the service), and 503 from the start of a shutdown on, so that a load
// balancer stops sending requests before the listener closes.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if s.draining.Load() {
		Error(w, r, s.log, intentd.Errorf(intentd.KindBusy, intentd.CodeShuttingDown, "the service is shutting down"))
		return
	}
	if s.opts.Ready != nil {
		select {
		case <-s.opts.Ready:
		default:
			Error(w, r, s.log, intentd.Errorf(intentd.KindBusy, CodeNotReady, "the service is starting: start-up recovery is not over"))
			return
		}
	}
	// A service that refuses writes cannot do what most requests ask; the balancer is
	// told, with the reason, and reads still reach it directly. The store's own words
	// (its folder) are for the log, not for this unauthenticated route.
	if s.opts.Writable != nil {
		if err := s.opts.Writable(); err != nil {
			s.log.WarnContext(r.Context(), "not ready: writes are refused", "err", err)
			var e *intentd.Error
			switch {
			case errors.Is(err, intentd.ErrStorageFull):
				Error(w, r, s.log, intentd.Errorf(intentd.KindBusy, intentd.CodeStorageFull, "the data folder's disk is nearly full: writes are refused until space is freed; reads go on"))
			case errors.As(err, &e) && (e.Code == intentd.CodeStoreMissing || e.Code == intentd.CodeStoreChanged):
				// Its message names nothing of the store; the cause, logged above, does.
				Error(w, r, s.log, intentd.Errorf(intentd.KindBusy, e.Code, "%s", e.Message))
			default:
				Error(w, r, s.log, intentd.Errorf(intentd.KindBusy, intentd.CodeStoreUnavailable, "the store's servers do not answer: writes are refused until they are back"))
			}
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ready\n" + s.readyDetails()))
}

// CodeNotReady: GET /readyz before start-up recovery is over (503).
const CodeNotReady = "not_ready"

// Drain makes GET /readyz answer 503 while the server goes on serving, so that load
// balancers take it out of rotation before Shutdown closes the listener.
func (s *Server) Drain() { s.draining.Store(true) }
