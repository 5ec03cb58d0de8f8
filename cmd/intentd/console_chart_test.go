package main

import (
	"net/http"
	"testing"
	"time"
)

// TestConsoleLiveChart checks that the Live page's chart places outcomes in the minute
// the server stored them, not the minute they reached the page: three outcomes are
// decided in one minute and one in the next, and only then is the page opened, so that
// all four come in the replay of its first connection within moments. The chart must
// show three in the earlier minute and one in the later, and an outcome decided while
// the page is open in the minute it happened. It waits for a minute's turn, so it takes
// up to a minute and a quarter.
func TestConsoleLiveChart(t *testing.T) {
	// Parallel: it mostly sleeps, and its three outcomes have 15s or more to be decided in.
	t.Parallel()
	if chromiumPath() == "" {
		t.Skip("no Chromium (chromium in PATH or /usr/bin/chromium): the console tests need Debian's chromium package (apt-get install chromium)")
	}
	if testing.Short() {
		t.Skip("the console tests start Chromium, and this one waits for a minute's turn")
	}
	s := startServer(t, nil)
	untilTurn := func() time.Duration {
		now := time.Now()
		return now.Truncate(time.Minute).Add(time.Minute).Sub(now)
	}
	decide := func(solution, want string) {
		t.Helper()
		id := s.submit()
		if r := s.propose(id, solution); r.status != http.StatusOK {
			t.Fatalf("proposal: %s", r)
		}
		s.waitStatus(id, want)
	}

	// Three outcomes in one minute, begun with time to spare before its turn.
	if untilTurn() < 15*time.Second {
		time.Sleep(untilTurn() + 200*time.Millisecond)
	}
	earlier := time.Now().Unix() / 60
	decide(solutionPasses, "success")
	decide(solutionOutOfStock, "failure")
	decide(solutionPasses, "success")
	if now := time.Now().Unix() / 60; now != earlier {
		t.Fatalf("deciding three outcomes took from minute %d into %d; the machine is too slow for this test", earlier, now)
	}
	// One in the next minute.
	time.Sleep(untilTurn() + 300*time.Millisecond)
	later := earlier + 1
	decide(solutionPasses, "success")
	if now := time.Now().Unix() / 60; now != later {
		t.Fatalf("the fourth outcome was decided in minute %d, want %d", now, later)
	}

	b := newConsoleBrowser(t, s)
	b.open("#/live")
	b.wait("the replay and the chart placed by the server's marks",
		`document.querySelectorAll("#events tr").length === 4 && document.querySelector(".chart svg[data-chart=placed]") && `+
			`[...document.querySelectorAll(".chart rect")].reduce((n, r) => n + Number(r.dataset.count), 0) === 4`, 10*time.Second)
	type bar struct {
		Minute int64
		Type   string
		Count  int
	}
	bars := func() map[int64]map[string]int {
		var rs []bar
		b.eval(`[...document.querySelectorAll(".chart rect")].map(r => ({minute: Number(r.dataset.minute), type: r.getAttribute("class"), count: Number(r.dataset.count)}))`, &rs)
		out := map[int64]map[string]int{}
		for _, r := range rs {
			if out[r.Minute] == nil {
				out[r.Minute] = map[string]int{}
			}
			out[r.Minute][r.Type] += r.Count
		}
		return out
	}
	got := bars()
	if len(got) != 2 || got[earlier]["success"] != 2 || got[earlier]["failure"] != 1 || got[later]["success"] != 1 || len(got[later]) != 1 {
		t.Fatalf("the chart has %v (minute: type: count); want minute %d: 2 success and 1 failure, minute %d: 1 success", got, earlier, later)
	}
	if note := b.text("#chart-note"); note != "each in the minute the server stored it, by the server's clock" {
		t.Errorf("the chart's note says %q", note)
	}

	// An outcome decided while the page is open is counted in the minute it happened.
	before := time.Now().Unix() / 60
	decide(solutionOutOfStock, "failure")
	after := time.Now().Unix() / 60
	b.wait("the live outcome on the chart", `[...document.querySelectorAll(".chart rect")].reduce((n, r) => n + Number(r.dataset.count), 0) === 5`, 5*time.Second)
	got = bars()
	live := 0
	for m := before; m <= after; m++ {
		live += got[m]["failure"]
	}
	if got[earlier]["success"] != 2 || got[earlier]["failure"] != 1 || live != 1 {
		t.Fatalf("after a live outcome in minute %d..%d the chart has %v", before, after, got)
	}
	b.screenshot("live-chart", `document.querySelector(".chart rect")`)
}
