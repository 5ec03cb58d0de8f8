package http

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/tlog"
)

// LogWitnesses is the witnesses of the transparency log as the server reports them:
// in GET /log/witnesses, GET /readyz and the metrics. *tlog.Log is one.
type LogWitnesses interface {
	// Witnesses is each witness's state, in the policy's order.
	Witnesses() []tlog.WitnessStatus
	// Uncosigned is the number of leaves no checkpoint meeting the quorum covers.
	Uncosigned() uint64
}

// witnessesBody is the answer of GET /log/witnesses.
type witnessesBody struct {
	// UncosignedLeaves are the leaves beyond the newest checkpoint that meets the
	// quorum.
	UncosignedLeaves uint64               `json:"uncosigned_leaves"`
	Witnesses        []tlog.WitnessStatus `json:"witnesses"`
}

// handleLogWitnesses answers what the log knows of its witnesses: for the console and
// for an operator; 404 when the log has none.
func (s *Server) handleLogWitnesses(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if s.opts.Witnesses == nil {
		Error(w, r, s.log, intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, "this server's transparency log has no witnesses"))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, witnessesBody{UncosignedLeaves: s.opts.Witnesses.Uncosigned(), Witnesses: s.opts.Witnesses.Witnesses()})
}

// readyDetails are the lines GET /readyz adds after "ready": each witness's standing
// alarm, and each that cannot be reached. A witness does not make the service unready:
// the log goes on, and readers who require the quorum wait for it.
func (s *Server) readyDetails() string {
	if s.opts.Witnesses == nil {
		return ""
	}
	var b strings.Builder
	for _, st := range s.opts.Witnesses.Witnesses() {
		switch {
		case st.Alarm != "":
			fmt.Fprintf(&b, "witness %s: ALARM %s\n", st.Name, st.Alarm)
		case st.Error != "":
			fmt.Fprintf(&b, "witness %s: unreachable (%d failed requests)\n", st.Name, st.Failures)
		}
	}
	if n := s.opts.Witnesses.Uncosigned(); n > 0 {
		fmt.Fprintf(&b, "log: %d leaves not yet covered by a checkpoint that meets the witnesses' quorum\n", n)
	}
	return b.String()
}

var (
	descWitnessRequests = prometheus.NewDesc("intentd_tlog_witness_requests_total",
		"Requests sent to a witness of the transparency log (add-checkpoint).", []string{"witness"}, nil)
	descWitnessAlarms = prometheus.NewDesc("intentd_tlog_witness_alarms_total",
		"Answers of a witness that refuse the log's checkpoint: 403, 404, 422, or a cosignature that does not verify.", []string{"witness"}, nil)
	descWitnessFailures = prometheus.NewDesc("intentd_tlog_witness_failures_total",
		"Requests to a witness that got no usable answer: no connection, a time-out, a 5xx.", []string{"witness"}, nil)
	descWitnessCosigned = prometheus.NewDesc("intentd_tlog_witness_cosigned_size",
		"Tree size of the newest checkpoint a witness cosigned.", []string{"witness"}, nil)
	descWitnessAlarm = prometheus.NewDesc("intentd_tlog_witness_alarm",
		"1 while a witness's last answer was an alarm, else 0.", []string{"witness"}, nil)
	descUncosigned = prometheus.NewDesc("intentd_tlog_uncosigned_leaves",
		"Leaves of the transparency log that no checkpoint meeting the witnesses' quorum covers yet.", nil, nil)
)

// witnessCollector reads the witnesses' state at each scrape.
type witnessCollector struct{ w LogWitnesses }

func (c witnessCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descWitnessRequests, descWitnessAlarms, descWitnessFailures, descWitnessCosigned, descWitnessAlarm, descUncosigned} {
		ch <- d
	}
}

func (c witnessCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.w.Witnesses() {
		alarm := 0.0
		if st.Alarm != "" {
			alarm = 1
		}
		ch <- prometheus.MustNewConstMetric(descWitnessRequests, prometheus.CounterValue, float64(st.Requests), st.Name)
		ch <- prometheus.MustNewConstMetric(descWitnessAlarms, prometheus.CounterValue, float64(st.Alarms), st.Name)
		ch <- prometheus.MustNewConstMetric(descWitnessFailures, prometheus.CounterValue, float64(st.Failures), st.Name)
		ch <- prometheus.MustNewConstMetric(descWitnessCosigned, prometheus.GaugeValue, float64(st.Cosigned), st.Name)
		ch <- prometheus.MustNewConstMetric(descWitnessAlarm, prometheus.GaugeValue, alarm, st.Name)
	}
	ch <- prometheus.MustNewConstMetric(descUncosigned, prometheus.GaugeValue, float64(c.w.Uncosigned()))
}

// watchWitnesses adds the witnesses' metrics; only the first log counts.
func (m *Metrics) watchWitnesses(w LogWitnesses) {
	m.witnessOnce.Do(func() { m.reg.MustRegister(witnessCollector{w}) })
}
