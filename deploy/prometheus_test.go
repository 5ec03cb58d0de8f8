package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	rulesFile     = "prometheus/intentd-rules.yml"
	rulesTestFile = "prometheus/intentd-rules.test.yml"
)

// documentedMetrics returns the series of the metrics table of docs/operating.md, each
// with the labels the table gives it.
func documentedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	doc := readFile(t, "../docs/operating.md")
	_, section, ok := strings.Cut(doc, "\n## Metrics\n")
	if !ok {
		t.Fatal("docs/operating.md has no section ## Metrics")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	metrics := map[string][]string{}
	name := regexp.MustCompile("`(intentd_[a-z_]+)(?:\\{([a-z_,]*)\\})?`")
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `intentd_") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			var labels []string
			if m[2] != "" {
				labels = strings.Split(m[2], ",")
			}
			metrics[m[1]] = labels
		}
	}
	if len(metrics) < 10 {
		t.Fatalf("found %d series in docs/operating.md's metrics table; the table was not read", len(metrics))
	}
	return metrics
}

// sourceText returns the Go files of the module but their tests, as one text.
func sourceText(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != ".." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.Write(src)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// metricCodes returns the values the code label of intentd_http_errors_total takes:
// the codes of http's errorCodes, resolved from their constants. Any other code is
// counted as "other", so a rule on it would never fire.
func metricCodes(t *testing.T) map[string]bool {
	t.Helper()
	src := readFile(t, "../http/metrics.go")
	_, block, ok := strings.Cut(src, "var errorCodes = map[string]bool{")
	block, _, _ = strings.Cut(block, "\n}")
	if !ok {
		t.Fatal("http/metrics.go has no errorCodes; the codes the metrics count were not read")
	}
	values := map[string]string{}
	for _, m := range regexp.MustCompile(`\b(Code\w+)\s*=\s*"([a-z_]+)"`).FindAllStringSubmatch(sourceText(t), -1) {
		values[m[1]] = m[2]
	}
	codes := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b(Code\w+):`).FindAllStringSubmatch(block, -1) {
		v, ok := values[m[1]]
		if !ok {
			t.Fatalf("no constant %s found for http's errorCodes", m[1])
		}
		codes[v] = true
	}
	if !codes["internal"] || !codes["storage_full"] {
		t.Fatalf("the codes read from http's errorCodes lack internal or storage_full: %v", codes)
	}
	return codes
}

// TestRulesNameRealSeries checks every intentd series of the rules against the metrics
// table of docs/operating.md and the code that exports it, the labels of each selector
// against the table's (and the scrape's own, job and instance), and the values of the
// code and route labels against those the metrics count: Prometheus takes a misspelt
// name or value as a series that is not there yet, and the alert never fires.
func TestRulesNameRealSeries(t *testing.T) {
	if found := checkSeries(t, rulesFile, readFile(t, rulesFile)); found < 10 {
		t.Errorf("found %d intentd series in %s; the rules were not read", found, rulesFile)
	}
}

// checkSeries checks every intentd series that text (of file) selects, as
// TestRulesNameRealSeries says, and returns how many it found.
func checkSeries(t *testing.T, file, text string) int {
	t.Helper()
	documented := documentedMetrics(t)
	src := sourceText(t)
	codes := metricCodes(t)
	routes := readFile(t, "../http/routes.go")

	selector := regexp.MustCompile(`\b(intentd_[a-z_]+)(\{[^}]*\})?`)
	matcher := regexp.MustCompile(`(\w+)\s*(?:=~|!~|!=|=)\s*"([^"]*)"`)
	found := 0
	for _, m := range selector.FindAllStringSubmatch(text, -1) {
		found++
		name := m[1]
		labels, ok := documented[name]
		if !ok {
			// A histogram's series carry a suffix the table leaves out.
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, cut := strings.CutSuffix(name, suffix); cut {
					if labels, ok = documented[base]; ok {
						name = base
						labels = append(labels, "le")
						break
					}
				}
			}
		}
		if !ok {
			t.Errorf("%s uses %s, which is not in docs/operating.md's metrics table", file, m[1])
			continue
		}
		if !strings.Contains(src, `"`+name+`"`) {
			t.Errorf("%s uses %s, which docs/operating.md lists but no Go file of the module names", file, name)
		}
		for _, lm := range matcher.FindAllStringSubmatch(m[2], -1) {
			label, value := lm[1], lm[2]
			if label != "job" && label != "instance" && !contains(labels, label) {
				t.Errorf("%s selects %s by %s, a label it does not have (docs/operating.md gives %v)", file, name, label, labels)
			}
			for _, v := range strings.Split(value, "|") {
				switch {
				case label == "code" && !codes[v]:
					t.Errorf("%s selects %s{code=%q}: the metrics count no such code (http's errorCodes)", file, name, v)
				case label == "route" && !strings.Contains(routes, `"`+v+`"`):
					t.Errorf("%s selects %s{route=%q}: http/routes.go has no such route", file, name, v)
				}
			}
		}
	}
	return found
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// TestRulesPromtool runs promtool on the rules: check rules parses every expression
// and template, test rules feeds the alerts series and checks which fire.
func TestRulesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian: apt-get install prometheus): the rules are not checked by Prometheus")
	}
	if out, err := exec.Command(promtool, "check", "rules", rulesFile).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules %s: %v\n%s", rulesFile, err, out)
	}
	// test rules reads the rule files relative to its own file.
	cmd := exec.Command(promtool, "test", "rules", filepath.Base(rulesTestFile))
	cmd.Dir = filepath.Dir(rulesTestFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules %s: %v\n%s", rulesTestFile, err, out)
	}
}
