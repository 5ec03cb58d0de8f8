package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const dashboardFile = "grafana/intentd-dashboard.json"

// dashboard is what the test reads of a Grafana dashboard: its panels, and the queries
// and data source of each.
type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Inputs []struct {
		Name     string `json:"name"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	Panels []struct {
		ID         int    `json:"id"`
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestDashboard reads the Grafana dashboard: it is JSON that Grafana imports (a title,
// a uid, the Prometheus it asks for as an input and every panel on it), its panels
// have ids of their own and queries, and every intentd series they select is one the
// service exports, with labels it has (checkSeries); promtool, where installed, parses
// each query.
func TestDashboard(t *testing.T) {
	var d dashboard
	if err := json.Unmarshal([]byte(readFile(t, dashboardFile)), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" || len(d.Inputs) != 1 || d.Inputs[0].PluginID != "prometheus" {
		t.Fatalf("%s: title %q, uid %q, inputs %+v: want both, and a Prometheus data source as its one input", dashboardFile, d.Title, d.UID, d.Inputs)
	}
	ids := map[int]bool{}
	var exprs []string
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d appears twice", p.ID)
		}
		ids[p.ID] = true
		if p.Datasource.UID != "${"+d.Inputs[0].Name+"}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %q and %d queries; want the input's and at least one", p.Title, p.Datasource.UID, len(p.Targets))
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	if found := checkSeries(t, dashboardFile, strings.Join(exprs, "\n")); found < 15 {
		t.Errorf("found %d intentd series in %s; the panels were not read", found, dashboardFile)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian: apt-get install prometheus): the queries are not parsed")
	}
	// promtool parses the queries of recording rules, one each.
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range exprs {
		q, _ := json.Marshal(e)
		fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %s\n", i, q)
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
}
