package main_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/intentd/intentd/internal/golden"
)

// The targets of docs/cluster.md ("The targets"), read from a run of make cluster-cost:
// a cluster of three spends at most targetThree times one node's intentd CPU per
// intent, and a fourth member at most targetFourth of one node's.
const (
	targetThree  = 1.5
	targetFourth = 0.10
)

// costSummary is the rounds' figures by setup, each run set against the one node of
// its own round (the machine's speed moves from round to round, and a ratio of two
// runs far apart measures that too), with the median of the runs; then the two targets
// read from them. The fourth member is read twice: as an idle member beside a cluster
// of three (what a member spends following the intents others serve), and as a cluster
// of four less the cluster of three of the same round (a difference of two noisy
// figures). A round without one node gives no ratios.
func costSummary(rows []costRow) string {
	one, byRound := costRounds(rows)
	type figures struct{ ratio, idle, added []float64 }
	var order []string
	by := map[string]*figures{}
	for _, r := range rows {
		o := one[r.round]
		if o == 0 {
			continue
		}
		name := r.setup.String()
		f := by[name]
		if f == nil {
			f = &figures{}
			by[name] = f
			order = append(order, name)
		}
		f.ratio = append(f.ratio, r.intentdCPU/o)
		if r.setup.idle > 0 {
			f.idle = append(f.idle, r.idleCPU/o)
		}
		if smaller, ok := smallerCluster(byRound[r.round], r.setup); ok {
			f.added = append(f.added, (r.intentdCPU-smaller.intentdCPU)/o)
		}
	}
	var b strings.Builder
	b.WriteString("| setup | runs | / one node, each run | median | an idle member, of one node | median | the member added, of one node | median |\n|---|---|---|---|---|---|---|---|\n")
	for _, name := range order {
		f := by[name]
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", name, len(f.ratio),
			each(f.ratio, "%.2f"), median(f.ratio, "%.2f ×"), each(f.idle, "%.1f %%", 100), median(f.idle, "%.1f %%", 100),
			each(f.added, "%+.1f %%", 100), median(f.added, "%+.1f %%", 100))
	}
	b.WriteString("\n")
	three := costSetup{nodes: 3, cluster: true}
	idle := costSetup{nodes: 3, cluster: true, idle: 1}
	four := costSetup{nodes: 4, cluster: true}
	if f := by[three.String()]; f != nil {
		fmt.Fprintf(&b, "- a cluster of three at most %.1f times one node: %s\n", targetThree, verdict(f.ratio, targetThree, "%.2f ×", 1))
	}
	if f := by[idle.String()]; f != nil {
		fmt.Fprintf(&b, "- the fourth member at most %.0f %% of one node, as an idle member beside a cluster of three: %s\n", 100*targetFourth, verdict(f.idle, targetFourth, "%.1f %%", 100))
	}
	if f := by[four.String()]; f != nil && len(f.added) > 0 {
		fmt.Fprintf(&b, "- the fourth member at most %.0f %% of one node, as a cluster of four less one of three: %s\n", 100*targetFourth, verdict(f.added, targetFourth, "%+.1f %%", 100))
	}
	return b.String()
}

// costRounds sorts the rows by round: each round's one node's intentd CPU per intent
// (absent for a round that measured none) and its rows. A round that measured one node
// more than once (COST_SETUPS=1,c3,1: before and after the clusters) takes the mean, so
// that the machine's drift over the round moves the clusters' ratios less.
func costRounds(rows []costRow) (one map[int]float64, byRound map[int][]costRow) {
	one, byRound = map[int]float64{}, map[int][]costRow{}
	runs := map[int]int{}
	for _, r := range rows {
		if !r.setup.cluster {
			one[r.round] += r.intentdCPU
			runs[r.round]++
		}
		byRound[r.round] = append(byRound[r.round], r)
	}
	for round, n := range runs {
		one[round] /= float64(n)
	}
	return one, byRound
}

// smallerCluster finds, among a round's rows, the cluster one member smaller than s,
// with the same members keeping the log and none idle.
func smallerCluster(round []costRow, s costSetup) (costRow, bool) {
	if !s.cluster || s.idle > 0 || s.nodes < 2 {
		return costRow{}, false
	}
	for _, r := range round {
		if r.setup == (costSetup{nodes: s.nodes - 1, cluster: true, keepers: s.keepers}) {
			return r, true
		}
	}
	return costRow{}, false
}

// each is the figures, scaled by the first of scale if given, in format, joined.
func each(v []float64, format string, scale ...float64) string {
	k := 1.0
	if len(scale) > 0 {
		k = scale[0]
	}
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf(format, k*x)
	}
	return strings.Join(s, ", ")
}

// median is the median of v, scaled and formatted as each; "" for none.
func median(v []float64, format string, scale ...float64) string {
	if len(v) == 0 {
		return ""
	}
	return each([]float64{medianOf(v)}, format, scale...)
}

func medianOf(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// verdict says whether the median of v is at most target, and in how many runs each
// figure is.
func verdict(v []float64, target float64, format string, scale float64) string {
	met := 0
	for _, x := range v {
		if x <= target {
			met++
		}
	}
	m := medianOf(v)
	word := "met"
	if m > target {
		word = "not met"
	}
	return fmt.Sprintf("median %s, %s; at most the target in %d of %d runs", fmt.Sprintf(format, scale*m), word, met, len(v))
}

// TestCostSummary reads the figures of three rounds as make cluster-cost tabulates and
// summarises them: each run against its own round's one node and the cluster one member
// smaller, the medians, and the targets met or not, from figures kept from the runs of
// 2026-11-30 (21:14 to 21:24 UTC).
func TestCostSummary(t *testing.T) {
	c := func(nodes, idle int) costSetup { return costSetup{nodes: nodes, cluster: true, idle: idle} }
	var rows []costRow
	for i, r := range []struct{ one, three, four, idle3, idleCPU float64 }{
		{1532, 2324, 2411, 2067, 130},
		{1417, 2152, 2487, 2098, 143},
		{1599, 2116, 2270, 2158, 148},
	} {
		round := i + 1
		rows = append(rows,
			costRow{round: round, setup: costSetup{nodes: 1}, intentdCPU: r.one},
			costRow{round: round, setup: c(3, 0), intentdCPU: r.three},
			costRow{round: round, setup: c(4, 0), intentdCPU: r.four},
			costRow{round: round, setup: c(3, 1), intentdCPU: r.idle3, idleCPU: r.idleCPU})
	}
	t.Run("three rounds", func(t *testing.T) {
		golden.Check(t, filepath.Join("testdata", "cost-summary.golden"), costSummary(rows))
	})
	t.Run("the table of the runs", func(t *testing.T) {
		golden.Check(t, filepath.Join("testdata", "cost-table.golden"), costTable(rows, "300", "30s"))
	})
	t.Run("one node measured twice in a round", func(t *testing.T) {
		twice := []costRow{
			{round: 1, setup: costSetup{nodes: 1}, intentdCPU: 1000},
			{round: 1, setup: c(3, 0), intentdCPU: 1650},
			{round: 1, setup: costSetup{nodes: 1}, intentdCPU: 1200},
		}
		one, _ := costRounds(twice)
		if one[1] != 1100 {
			t.Fatalf("the round's one node = %v, want the mean of its two runs, 1100", one[1])
		}
		if got := costSummary(twice); !strings.Contains(got, "median 1.50 ×") {
			t.Fatalf("a cluster of three against the mean of one node's runs, want 1.50:\n%s", got)
		}
	})
	t.Run("report names", func(t *testing.T) {
		for _, tt := range []struct {
			s    costSetup
			nth  int
			want string
		}{
			{costSetup{nodes: 1}, 1, "r2-n1+0-false.json"},
			{costSetup{nodes: 1}, 2, "r2-n1+0-false-2.json"},
			{c(3, 1), 1, "r2-n3+1-true.json"},
			{costSetup{nodes: 3, cluster: true, keepers: 1}, 1, "r2-n3+0-true-log1.json"},
		} {
			if got := reportName(2, tt.s, tt.nth); got != tt.want {
				t.Errorf("reportName(2, %v, %d) = %q, want %q", tt.s, tt.nth, got, tt.want)
			}
		}
	})
	t.Run("a round without one node gives no ratios", func(t *testing.T) {
		got := costSummary(rows[1:4])
		if strings.Contains(got, "| 3-node cluster |") || strings.Contains(got, "- a cluster of three") {
			t.Fatalf("ratios without one node:\n%s", got)
		}
	})
	t.Run("medians", func(t *testing.T) {
		for _, tt := range []struct {
			v    []float64
			want float64
		}{
			{[]float64{3}, 3},
			{[]float64{3, 1, 2}, 2},
			{[]float64{4, 1, 3, 2}, 2.5},
		} {
			if got := medianOf(tt.v); got != tt.want {
				t.Errorf("median of %v: %v, want %v", tt.v, got, tt.want)
			}
		}
	})
}
