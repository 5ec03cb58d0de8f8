package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for the tool's own executable when the
// baseline scenario starts it as the bare server.
func TestMain(m *testing.M) {
	if kind := os.Getenv(baselineEnv); kind != "" {
		if err := serveBaseline(os.Stderr, kind); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// figureOf returns the named figure of a report, failing the test when it is missing.
func figureOf(t *testing.T, r Report, name string) Figure {
	t.Helper()
	for _, f := range r.Figures {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("report has no figure %q; it has %v", name, r.Figures)
	return Figure{}
}

func seriesNamed(t *testing.T, r Report, name string) Series {
	t.Helper()
	for _, s := range r.Series {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("report has no series %q; it has %v", name, r.Series)
	return Series{}
}

// checkSeries wants a series with count values, none failed, and ordered quantiles.
func checkSeries(t *testing.T, s Series, count uint64) {
	t.Helper()
	if count > 0 && s.Count != count {
		t.Errorf("%s: count %d, want %d", s.Name, s.Count, count)
	}
	if s.Count == 0 {
		t.Errorf("%s: nothing measured", s.Name)
	}
	if len(s.Errors) > 0 {
		t.Errorf("%s: errors %v", s.Name, s.Errors)
	}
	if !(s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.Max) || s.Max <= 0 {
		t.Errorf("%s: quantiles out of order: p50 %v p90 %v p99 %v max %v", s.Name, s.P50, s.P90, s.P99, s.Max)
	}
}

// scenarioCase is a scenario run with args beside the common ones, and the checks of
// its report.
type scenarioCase struct {
	scenario string
	args     []string
	check    func(t *testing.T, r Report)
}

// scenarioCases are the scenarios TestScenarios runs, each sized to a second or two.
var scenarioCases = []scenarioCase{
	{"intake", []string{"--duration", "1s", "--warmup", "200ms", "--intents", "300"}, func(t *testing.T, r Report) {
		s := seriesNamed(t, r, "POST /intents")
		checkSeries(t, s, 0)
		if s.Count > 300 || s.PerSecond <= 0 {
			t.Errorf("count %d at %v/s, want at most the 300 signed, above 0/s", s.Count, s.PerSecond)
		}
		if f := figureOf(t, r, "intake throughput"); f.Met == nil || f.Value != s.PerSecond {
			t.Errorf("intake throughput figure %+v, want the series' %v/s held to a target", f, s.PerSecond)
		}
	}},
	{"baseline", []string{"--duration", "1s", "--warmup", "0s", "--intents", "200"}, func(t *testing.T, r Report) {
		in := seriesNamed(t, r, "intake: POST /intents")
		bare := seriesNamed(t, r, "baseline: POST /intents")
		checkSeries(t, in, 0)
		checkSeries(t, bare, 0)
		ratio := figureOf(t, r, "intake/baseline throughput ratio")
		if want := in.PerSecond / bare.PerSecond; ratio.Value != want {
			t.Errorf("ratio %v, want %v", ratio.Value, want)
		}
	}},
	{"decide", []string{"--duration", "1s", "--rate", "40", "--drain", "20s"}, func(t *testing.T, r Report) {
		checkSeries(t, seriesNamed(t, r, "POST proposal (from due time)"), 40)
		checkSeries(t, seriesNamed(t, r, "proposal 200 -> event"), 40)
		if f := figureOf(t, r, "events missing"); f.Value != 0 {
			t.Errorf("%v events missing", f.Value)
		}
		if f := figureOf(t, r, "events duplicated"); f.Value != 0 {
			t.Errorf("%v events duplicated", f.Value)
		}
		// One second of 40 proposals is below the 100 a second needs to count.
		if f := figureOf(t, r, "seconds with over 1 % of gaps above 10 ms"); f.Value != 0 {
			t.Errorf("%v bursty seconds counted in a run without a whole second", f.Value)
		}
		if f := figureOf(t, r, "per proposal: server page faults per second"); f.Value < 0 {
			t.Errorf("page faults per second %v", f.Value)
		}
		// Zero where the data folder is in memory (tmpfs), so only its presence and
		// sign are checked.
		if f := figureOf(t, r, "per proposal: server bytes written per request"); f.Value < 0 {
			t.Errorf("bytes written per proposal %v", f.Value)
		}
		checkSlowCauses(t, r, true)
	}},
	{"intake-floor", []string{"--duration", "1s", "--warmup", "0s", "--intents", "200"}, func(t *testing.T, r Report) {
		floor := seriesNamed(t, r, "floor: POST /intents")
		bare := seriesNamed(t, r, "baseline: POST /intents")
		checkSeries(t, floor, 0)
		checkSeries(t, bare, 0)
		if ratio := figureOf(t, r, "floor/baseline throughput ratio"); ratio.Value != floor.PerSecond/bare.PerSecond {
			t.Errorf("ratio %v, want %v", ratio.Value, floor.PerSecond/bare.PerSecond)
		}
		if f := figureOf(t, r, "floor: server CPU per request"); f.Value <= 0 {
			t.Errorf("the floor's CPU per intent is %v, want it measured", f.Value)
		}
	}},
	{"decide-floor", []string{"--duration", "1s", "--rate", "40", "--drain", "20s"}, func(t *testing.T, r Report) {
		checkSeries(t, seriesNamed(t, r, "proposal 200 -> event"), 40)
		if f := figureOf(t, r, "events missing"); f.Value != 0 {
			t.Errorf("%v events missing", f.Value)
		}
		if f := figureOf(t, r, "per proposal: server CPU per request"); f.Value <= 0 {
			t.Errorf("the floor's CPU per proposal is %v, want it measured", f.Value)
		}
		checkSlowCauses(t, r, false)
	}},
	{"fanout", []string{"--duration", "1s", "--rate", "20", "--subscribers", "25", "--drain", "20s"}, func(t *testing.T, r Report) {
		checkSeries(t, seriesNamed(t, r, "delivery lag (proposal 200 -> read)"), 20*25)
		for name, want := range map[string]float64{"events produced": 20, "deliveries read": 500, "events lost": 0, "events duplicated": 0} {
			if f := figureOf(t, r, name); f.Value != want {
				t.Errorf("%s = %v, want %v", name, f.Value, want)
			}
		}
	}},
	{"soak-open", []string{"--intents", "400", "--settle", "0s", "--status-samples", "100"}, func(t *testing.T, r Report) {
		checkSeries(t, seriesNamed(t, r, "GET status after the restart"), 100)
		if f := figureOf(t, r, "open intents"); f.Value != 400 {
			t.Errorf("open intents %v, want 400", f.Value)
		}
		if f := figureOf(t, r, "restart: exec to the first status served"); f.Value <= 0 || f.Met == nil {
			t.Errorf("restart figure %+v, want a positive time held to a target", f)
		}
		if f := figureOf(t, r, "resident memory right after the fill"); f.Value <= 1 {
			t.Errorf("resident memory %v MiB, want a real size", f.Value)
		}
		for _, n := range r.Notes {
			if strings.Contains(n, "want open") {
				t.Error(n)
			}
		}
	}},
}

// TestScenarios runs every scenario at a size of a second or two against an intentd
// the tool starts, so that the tool keeps working as the server changes.
func TestScenarios(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := buildIntentd(ctx, dir, raceEnabled)
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"--json", "--quiet", "--intentd", bin, "--concurrency", "8"}
	for _, tt := range scenarioCases {
		t.Run(tt.scenario, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := append(append([]string{tt.scenario}, common...), tt.args...)
			if err := run(ctx, args, &out, &errs); err != nil {
				t.Fatalf("run %q: %v\n%s", args, err, errs.String())
			}
			var r Report
			dec := json.NewDecoder(&out)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("the report is not JSON: %v\n%s", err, out.String())
			}
			if r.Scenario != tt.scenario || r.Machine.Cores < 1 || r.Machine.GoVersion == "" {
				t.Errorf("report header %q %+v", r.Scenario, r.Machine)
			}
			tt.check(t, r)
			if t.Failed() {
				t.Logf("report:\n%s", out.String())
			}
		})
	}
}

// checkSlowCauses checks the figures of what decide's slow proposals met. The counts
// themselves depend on the host; what a short run can check is that the server's
// collections reached the tool (intentd collects while it starts), which needs the
// gctrace setting to have reached the child and its lines to parse.
func checkSlowCauses(t *testing.T, r Report, wantCollections bool) {
	t.Helper()
	slow := figureOf(t, r, "proposals over 10 ms").Value
	store := figureOf(t, r, "  of them while the store flushed or compacted").Value
	gc := figureOf(t, r, "  of them while the collector ran, the store not").Value
	if slow < 0 || store < 0 || gc < 0 || store+gc > slow {
		t.Errorf("%v proposals over 10 ms, %v of them in the store's work and %v in collections", slow, store, gc)
	}
	for _, name := range []string{"  share of the run the store flushed or compacted", "  share of the run the collector ran"} {
		if f := figureOf(t, r, name); f.Value < 0 || f.Value > 100 {
			t.Errorf("%s: %v %%", name, f.Value)
		}
	}
	if n := figureOf(t, r, "server: collections it logged").Value; wantCollections && n == 0 {
		t.Error("no collection of the server reached the tool: gctrace is off or its lines no longer parse")
	}
}

// TestTableOutput checks the table form names every series and figure.
func TestTableOutput(t *testing.T) {
	var h hist
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	r := Report{Scenario: "intake", Machine: thisMachine(), Settings: map[string]string{"duration": "1s"}}
	r.series(seriesOf("POST /intents", &h, time.Second, map[string]int64{"503": 2}))
	r.target("intake throughput", 100, "intents/s", 8000, true)
	r.note("a note")
	var b bytes.Buffer
	if err := r.Write(&b, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"POST /intents", "100", "50.", "99.", "503:2", "intake throughput", ">= 8000 missed", "note: a note", "duration=1s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
		check   func(t *testing.T, o options)
	}{
		{args: nil, wantErr: "want a scenario"},
		{args: []string{"nosuch"}, wantErr: "unknown scenario"},
		{args: []string{"intake", "extra"}, wantErr: "unexpected argument"},
		{args: []string{"intake", "--concurrency", "0"}, wantErr: "--concurrency"},
		{args: []string{"decide", "--rate", "0"}, wantErr: "needs a rate"},
		{args: []string{"soak-open", "--server", "http://x"}, wantErr: "drop --server"},
		{args: []string{"intake"}, check: func(t *testing.T, o options) {
			if o.Rate != 0 || o.Concurrency != 64 {
				t.Errorf("intake defaults: rate %v concurrency %d, want closed loop at 64", o.Rate, o.Concurrency)
			}
		}},
		{args: []string{"fanout", "--server", "http://h:1/"}, check: func(t *testing.T, o options) {
			if o.Rate != 1000 || o.Subscribers != 1000 || len(o.Servers) != 1 || o.Servers[0] != "http://h:1" {
				t.Errorf("fanout defaults: rate %v subscribers %d servers %q", o.Rate, o.Subscribers, o.Servers)
			}
		}},
		{args: []string{"soak-open"}, check: func(t *testing.T, o options) {
			if o.soakIntents() != 1_000_000 {
				t.Errorf("soak-open intents %d, want 1,000,000", o.soakIntents())
			}
		}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var errs bytes.Buffer
			_, o, err := parseArgs(tt.args, &errs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}
