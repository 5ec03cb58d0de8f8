package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRedactArgs checks that every form the flag package reads a secret flag in comes
// out redacted, and that nothing else is touched.
func TestRedactArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args, want []string
	}{
		{"two dashes, then the value", []string{"--nats-token", "s3cret"}, []string{"--nats-token", redacted}},
		{"one dash, then the value", []string{"-nats-token", "s3cret"}, []string{"-nats-token", redacted}},
		{"two dashes and =", []string{"--nats-token=s3cret"}, []string{"--nats-token=" + redacted}},
		{"one dash and =", []string{"-nats-token=s3cret"}, []string{"-nats-token=" + redacted}},
		{"an = in the token", []string{"--nats-token=a=b"}, []string{"--nats-token=" + redacted}},
		{"a token that looks like a flag", []string{"--nats-token", "--listen", "--data", "d"},
			[]string{"--nats-token", redacted, "--data", "d"}},
		{"given twice", []string{"--nats-token", "one", "-nats-token=two"}, []string{"--nats-token", redacted, "-nats-token=" + redacted}},
		{"among others", []string{"--listen", ":8080", "--nats-token", "s3cret", "--allow-unsigned", "--data=/var/lib/intentd"},
			[]string{"--listen", ":8080", "--nats-token", redacted, "--allow-unsigned", "--data=/var/lib/intentd"}},
		{"@FILE", []string{"--nats-token", "@/run/secrets/nats"}, []string{"--nats-token", redacted}},
		{"the last argument, no value", []string{"--listen", ":8080", "--nats-token"}, []string{"--listen", ":8080", "--nats-token"}},
		{"a file flag is no secret", []string{"--nats-token-file", "/run/secrets/nats", "--nats-creds=/etc/nats.creds"},
			[]string{"--nats-token-file", "/run/secrets/nats", "--nats-creds=/etc/nats.creds"}},
		{"past a stray argument and --", []string{"serve", "--", "--nats-token", "s3cret"}, []string{"serve", "--", "--nats-token", redacted}},
		{"three dashes are no flag", []string{"---nats-token", "s3cret"}, []string{"---nats-token", "s3cret"}},
		{"a value equal to a flag's name", []string{"--catalog", "--nats-token"}, []string{"--catalog", "--nats-token"}},
		{"a store URL with a user and password", []string{"--store", "nats://user:pa55@nats1:4222,nats://user:pa55@nats2:4222"},
			[]string{"--store", "nats://xxxxx@nats1:4222,nats://xxxxx@nats2:4222"}},
		{"a store URL with a token", []string{"--store=nats://s3cret@nats1:4222"}, []string{"--store=nats://xxxxx@nats1:4222"}},
		{"a password with a comma, a slash and an @", []string{"-store", "nats://u:a,b/c@d@nats1:4222"}, []string{"-store", "nats://xxxxx@xxxxx@nats1:4222"}},
		{"a store URL without credentials", []string{"--store", "nats://nats1:4222"}, []string{"--store", "nats://nats1:4222"}},
		{"an evidence service URL with a password", []string{"--extractor-url", "https://user:pa55@evidence.internal/v1"},
			[]string{"--extractor-url", "https://xxxxx@evidence.internal/v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"/usr/bin/intentd"}, tt.args...)
			kept := slices.Clone(args)
			got := redactArgs(args)
			if want := append([]string{"/usr/bin/intentd"}, tt.want...); !slices.Equal(got, want) {
				t.Fatalf("redactArgs(%q)\n = %q\nwant %q", tt.args, got, want)
			}
			if !slices.Equal(args, kept) {
				t.Fatalf("redactArgs changed its argument: %q", args)
			}
		})
	}
	t.Run("served as net/http/pprof serves it", func(t *testing.T) {
		rec := httptest.NewRecorder()
		cmdlineHandler([]string{"intentd", "--nats-token", "s3cret"}).ServeHTTP(rec, httptest.NewRequest("GET", "/debug/pprof/cmdline", nil))
		if body := rec.Body.String(); body != "intentd\x00--nats-token\x00"+redacted || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("cmdline: %q, %q", rec.Header().Get("Content-Type"), body)
		}
	})
}

// pprofURL is the profiler's base URL, as the server logged it.
var pprofURL = regexp.MustCompile(`msg="serving the profiler[^"]*" url=(\S+)`)

// get fetches url and returns its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestPprofCmdline starts intentd with a NATS token on its command line, in both
// forms, and reads /debug/pprof/cmdline from the real profiler's listener: the token is
// not there, the rest of the command line is, and net/http/pprof's other routes answer.
func TestPprofCmdline(t *testing.T) {
	t.Parallel()
	const secret = "pprof-s3cret-4b7f"
	args := []string{"--pprof", "127.0.0.1:0", "--nats-token", secret, "-nats-token=" + secret}
	s := startServer(t, args, func(m *Main) { m.cmdline = append([]string{"intentd"}, args...) })
	match := pprofURL.FindStringSubmatch(s.logs.String())
	if match == nil {
		t.Fatalf("no profiler URL in the logs:\n%s", s.logs)
	}
	status, body := get(t, match[1]+"cmdline")
	if status != http.StatusOK || strings.Contains(body, secret) {
		t.Fatalf("/debug/pprof/cmdline: %d %q, want the command line without the token", status, body)
	}
	if want := "intentd\x00--pprof\x00127.0.0.1:0\x00--nats-token\x00" + redacted + "\x00-nats-token=" + redacted; body != want {
		t.Fatalf("/debug/pprof/cmdline = %q, want %q", body, want)
	}
	if status, body := get(t, match[1]); status != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Fatalf("/debug/pprof/: %d %.200s", status, body)
	}
	if status, body := get(t, match[1]+"goroutine?debug=1"); status != http.StatusOK || strings.Contains(body, secret) {
		t.Fatalf("/debug/pprof/goroutine: %d, shows the token: %v", status, strings.Contains(body, secret))
	}
	if logs := s.logs.String(); !strings.Contains(logs, `level=WARN msg="a secret given on the command line`) ||
		!strings.Contains(logs, "flag=--nats-token") || strings.Contains(logs, secret) {
		t.Fatalf("want a warning naming --nats-token, and no token, in the logs:\n%s", logs)
	}
}

// TestPprofWarning checks that a profiler beyond the loopback interface is logged at
// warn, naming the risk, and one on it at info.
func TestPprofWarning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, addr string
		warn       bool
	}{
		{"loopback", "127.0.0.1:0", false},
		{"every interface", "0.0.0.0:0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, []string{"--pprof", tt.addr})
			logs := s.logs.String()
			warned := strings.Contains(logs, `level=WARN msg="serving the profiler beyond the loopback interface, with no authentication: anyone who reaches this address reads the process's memory profiles, goroutine stacks and command line`)
			informed := strings.Contains(logs, `level=INFO msg="serving the profiler" url=http://127.0.0.1:`)
			if warned != tt.warn || informed == tt.warn {
				t.Fatalf("--pprof %s: warned %v, want %v:\n%s", tt.addr, warned, tt.warn, logs)
			}
			if match := pprofURL.FindStringSubmatch(logs); match == nil {
				t.Fatalf("no profiler URL in the logs:\n%s", logs)
			} else if status, _ := get(t, match[1]+"cmdline"); status != http.StatusOK {
				t.Fatalf("/debug/pprof/cmdline: %d", status)
			}
		})
	}
}
