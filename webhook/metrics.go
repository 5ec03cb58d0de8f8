package webhook

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/intentd/intentd"
)

// metrics counts this member's deliveries per endpoint. The endpoints are few (at most
// --webhook-max), so the endpoint's id is a label of bounded cardinality.
type metrics struct {
	mu        sync.Mutex
	attempts  map[string]*[2]uint64 // by endpoint: successes, failures
	endpoints map[intentd.WebhookStatus]int
}

func newMetrics() *metrics {
	return &metrics{attempts: map[string]*[2]uint64{}, endpoints: map[intentd.WebhookStatus]int{}}
}

func (m *metrics) attempt(id string, a intentd.WebhookAttempt) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.attempts[id]
	if c == nil {
		c = new([2]uint64)
		m.attempts[id] = c
	}
	if a.Error == "" {
		c[0]++
	} else {
		c[1]++
	}
}

func (m *metrics) forget(id string) {
	m.mu.Lock()
	delete(m.attempts, id)
	m.mu.Unlock()
}

func (m *metrics) setEndpoints(c map[intentd.WebhookStatus]int) {
	m.mu.Lock()
	m.endpoints = c
	m.mu.Unlock()
}

var (
	descAttempts = prometheus.NewDesc("intentd_webhook_deliveries_total",
		"Delivery attempts this member made, by endpoint and result (success: a 2xx answer; failure: any other answer, or none).",
		[]string{"webhook", "result"}, nil)
	descLagEvents = prometheus.NewDesc("intentd_webhook_lag_events",
		"For each endpoint this member delivers: the events of its types the stream gave that it has not yet taken.",
		[]string{"webhook"}, nil)
	descLagSeconds = prometheus.NewDesc("intentd_webhook_lag_seconds",
		"For each endpoint this member delivers: the age of the oldest event it has not yet taken, 0 when none waits.",
		[]string{"webhook"}, nil)
	descInFlight = prometheus.NewDesc("intentd_webhook_deliveries_in_flight",
		"For each endpoint this member delivers: its deliveries under way, from an attempt's start until the endpoint's position moves past its event (at most its max_in_flight); an event waiting for its next attempt is not counted.",
		[]string{"webhook"}, nil)
	descEndpoints = prometheus.NewDesc("intentd_webhook_endpoints",
		"Webhook endpoints by status (active, failing, disabled), as this member last listed them.",
		[]string{"status"}, nil)
)

// Collector is the service's metrics, for the /metrics registry.
func (s *Service) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Service }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descAttempts
	ch <- descLagEvents
	ch <- descLagSeconds
	ch <- descInFlight
	ch <- descEndpoints
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	m := c.s.metrics
	m.mu.Lock()
	for id, n := range m.attempts {
		ch <- prometheus.MustNewConstMetric(descAttempts, prometheus.CounterValue, float64(n[0]), id, "success")
		ch <- prometheus.MustNewConstMetric(descAttempts, prometheus.CounterValue, float64(n[1]), id, "failure")
	}
	for _, st := range []intentd.WebhookStatus{intentd.WebhookActive, intentd.WebhookFailing, intentd.WebhookDisabled} {
		ch <- prometheus.MustNewConstMetric(descEndpoints, prometheus.GaugeValue, float64(m.endpoints[st]), string(st))
	}
	m.mu.Unlock()
	c.s.mu.Lock()
	ds := make([]*deliverer, 0, len(c.s.running))
	for _, d := range c.s.running {
		ds = append(ds, d)
	}
	c.s.mu.Unlock()
	now := time.Now()
	for _, d := range ds {
		d.mu.Lock()
		lag := uint64(0)
		if d.seen > d.rec.Delivered {
			lag = d.seen - d.rec.Delivered
		}
		age := 0.0
		if !d.headAt.IsZero() {
			age = now.Sub(d.headAt).Seconds()
		}
		var busy int64
		if d.busy != nil {
			busy = d.busy.Load()
		}
		d.mu.Unlock()
		ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(busy), d.id)
		ch <- prometheus.MustNewConstMetric(descLagEvents, prometheus.GaugeValue, float64(lag), d.id)
		ch <- prometheus.MustNewConstMetric(descLagSeconds, prometheus.GaugeValue, age, d.id)
	}
}
