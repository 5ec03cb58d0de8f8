package natsstore

import "github.com/prometheus/client_golang/prometheus"

// Collector returns a Prometheus collector of the store's followers of the stream: how
// many times a follower that stood still, with records after its last, was replaced
// (intentd_store_follower_replacements_total, by what it follows). A rising count means
// a node's index or event stream stood still for stallAfter and was caught up: the
// consumer's own recovery failed, as it can after a stream leader is lost.
//
// It also reports intentd_store_server_moves_total: how many times the store moved its
// connection to another NATS server because the connected one left a ping unanswered
// after the followers' heartbeats stopped (probe.go). A rising count is a NATS server
// that stalls without closing its connections.
func (s *Store) Collector() prometheus.Collector {
	return followerCollector{s: s,
		desc: prometheus.NewDesc("intentd_store_follower_replacements_total",
			"Followers of the NATS stream replaced after they fell behind the stream for 2 s.", []string{"follows"}, nil),
		moves: prometheus.NewDesc("intentd_store_server_moves_total",
			"Connections moved to another NATS server after the connected one stopped answering.", nil, nil)}
}

type followerCollector struct {
	s     *Store
	desc  *prometheus.Desc
	moves *prometheus.Desc
}

func (c followerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.moves }

func (c followerCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.moves, prometheus.CounterValue, float64(c.s.serverMoves.Load()))
	for _, f := range c.s.followers() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(f.replaced.Load()), f.metricName())
	}
}
