package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a scenario prints: as a table, or as JSON with --json.
type Report struct {
	Scenario string            `json:"scenario"`
	Machine  Machine           `json:"machine"`
	Settings map[string]string `json:"settings"`
	// Series are latency distributions with their throughput.
	Series []Series `json:"series"`
	// Figures are single values: counts, ratios, sizes, times.
	Figures []Figure `json:"figures"`
	// Notes say what the reader must know to trust the figures.
	Notes []string `json:"notes,omitempty"`
}

// Machine is where the figures were taken.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	Kernel    string `json:"kernel"`
}

// Series is one latency distribution, in milliseconds.
type Series struct {
	Name      string           `json:"name"`
	Count     uint64           `json:"count"`
	Errors    map[string]int64 `json:"errors,omitempty"`
	Seconds   float64          `json:"seconds,omitempty"`
	PerSecond float64          `json:"per_second,omitempty"`
	P50       float64          `json:"p50_ms"`
	P90       float64          `json:"p90_ms"`
	P99       float64          `json:"p99_ms"`
	Max       float64          `json:"max_ms"`
	Mean      float64          `json:"mean_ms"`
}

// Figure is one value, with the target it is held to when there is one.
type Figure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit,omitempty"`
	Target string  `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// seriesOf summarises a histogram; elapsed, when not zero, gives the throughput.
func seriesOf(name string, h *hist, elapsed time.Duration, errs map[string]int64) Series {
	s := Series{
		Name: name, Count: h.Count(), Errors: errs,
		P50: ms(h.Quantile(0.50)), P90: ms(h.Quantile(0.90)), P99: ms(h.Quantile(0.99)),
		Max: ms(h.Max()), Mean: ms(h.Mean()),
	}
	if elapsed > 0 {
		s.Seconds = elapsed.Seconds()
		s.PerSecond = float64(h.Count()) / elapsed.Seconds()
	}
	return s
}

func (r *Report) series(s Series) { r.Series = append(r.Series, s) }

func (r *Report) figure(name string, v float64, unit string) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: v, Unit: unit})
}

// target records a figure held to a target; atLeast says which side of limit passes.
func (r *Report) target(name string, v float64, unit string, limit float64, atLeast bool) {
	met := v <= limit
	text := fmt.Sprintf("<= %s", trimFloat(limit))
	if atLeast {
		met = v >= limit
		text = fmt.Sprintf(">= %s", trimFloat(limit))
	}
	r.Figures = append(r.Figures, Figure{Name: name, Value: v, Unit: unit, Target: text, Met: &met})
}

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func trimFloat(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.3g", v)
}

// Write prints the report as JSON or as tables.
func (r *Report) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(w, "scenario %s on %s (%d cores), %s, kernel %s\n", r.Scenario, r.Machine.CPU, r.Machine.Cores, r.Machine.GoVersion, r.Machine.Kernel)
	var set []string
	for _, k := range sortedKeys(r.Settings) {
		set = append(set, k+"="+r.Settings[k])
	}
	fmt.Fprintf(w, "settings: %s\n\n", strings.Join(set, " "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(r.Series) > 0 {
		fmt.Fprintln(tw, "series\tcount\tper s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tmean ms\terrors\t")
		for _, s := range r.Series {
			errs := "0"
			if len(s.Errors) > 0 {
				var parts []string
				for _, k := range sortedKeys(s.Errors) {
					parts = append(parts, fmt.Sprintf("%s:%d", k, s.Errors[k]))
				}
				errs = strings.Join(parts, ",")
			}
			rate := "-"
			if s.PerSecond > 0 {
				rate = fmt.Sprintf("%.0f", s.PerSecond)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t\n", s.Name, s.Count, rate, s.P50, s.P90, s.P99, s.Max, s.Mean, errs)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(r.Figures) > 0 {
		fmt.Fprintln(tw, "figure\tvalue\tunit\ttarget\t")
		for _, f := range r.Figures {
			t := ""
			if f.Met != nil {
				t = f.Target + " missed"
				if *f.Met {
					t = f.Target + " met"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", f.Name, formatValue(f.Value), f.Unit, t)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func formatValue(v float64) string {
	switch {
	case v == float64(int64(v)):
		return fmt.Sprintf("%d", int64(v))
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// thisMachine describes the machine from /proc and uname.
func thisMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), CPU: "unknown", Kernel: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if name, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(name) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}
