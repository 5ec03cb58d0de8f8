package natsstore

import "github.com/prometheus/client_golang/prometheus"

// Collector returns a Prometheus collector of the store's followers of the stream: how
// many times a follower that stood still, with records after its last, was replaced
// (intentd_store_follower_replacements_total, by what it follows). A rising count means
// a node's index or event stream stood still for stallAfter and was caught up: the
// consumer's own recovery failed, as it can after a stream leader is lost.
func (s *Store) Collector() prometheus.Collector {
	return followerCollector{s: s, desc: prometheus.NewDesc("intentd_store_follower_replacements_total",
		"Followers of the NATS stream replaced after they fell behind the stream for 2 s.", []string{"follows"}, nil)}
}

type followerCollector struct {
	s    *Store
	desc *prometheus.Desc
}

func (c followerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c followerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range []*follower{c.s.watch, c.s.events} {
		if f == nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(f.replaced.Load()), f.metricName())
	}
}
