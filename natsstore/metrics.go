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
//
// And what the node's index follows (scope.go): intentd_store_index_follows_intents is
// 1 while it follows every intent, 0 while it follows the policies alone (a member that
// does not scan the index), and intentd_store_index_loads_total counts the loads of the
// index after such a narrowing: one each time the member becomes the one that scans,
// or is asked for the index (a policy's delete) after it narrowed.
//
// And whether it follows the events (eventscope.go): intentd_store_events_followed is 1
// while it does, 0 while nobody on the node reads them (no subscriber, no log, no
// webhook delivered there).
func (s *Store) Collector() prometheus.Collector {
	return followerCollector{s: s,
		desc: prometheus.NewDesc("intentd_store_follower_replacements_total",
			"Followers of the NATS stream replaced after they fell behind the stream for 2 s.", []string{"follows"}, nil),
		moves: prometheus.NewDesc("intentd_store_server_moves_total",
			"Connections moved to another NATS server after the connected one stopped answering.", nil, nil),
		follows: prometheus.NewDesc("intentd_store_index_follows_intents",
			"1 while this node's index follows every intent of the stream, 0 while it follows the policies alone.", nil, nil),
		loads: prometheus.NewDesc("intentd_store_index_loads_total",
			"Loads of the index of intents after this node had stopped following the intents.", nil, nil),
		events: prometheus.NewDesc("intentd_store_events_followed",
			"1 while this node follows the stream's events, 0 while nobody on it reads them.", nil, nil)}
}

type followerCollector struct {
	s              *Store
	desc, moves    *prometheus.Desc
	follows, loads *prometheus.Desc
	events         *prometheus.Desc
}

func (c followerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.desc
	ch <- c.moves
	ch <- c.follows
	ch <- c.loads
	ch <- c.events
}

func (c followerCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.moves, prometheus.CounterValue, float64(c.s.serverMoves.Load()))
	follows := 1.0
	if c.s.isPartial() {
		follows = 0
	}
	ch <- prometheus.MustNewConstMetric(c.follows, prometheus.GaugeValue, follows)
	ch <- prometheus.MustNewConstMetric(c.loads, prometheus.CounterValue, float64(c.s.indexLoads.Load()))
	events := 1.0
	if c.s.eventsHalted.Load() {
		events = 0
	}
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, events)
	for _, f := range c.s.followers() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(f.replaced.Load()), f.metricName())
	}
}
