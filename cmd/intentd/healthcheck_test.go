package main

import (
	"errors"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/intentd/intentd/internal/syncbuf"
)

// TestHealthURL: the check asks the port of --listen, on loopback when the server
// listens on every interface, and refuses a port it cannot know.
func TestHealthURL(t *testing.T) {
	for _, tc := range []struct {
		listen, want, wantErr string
	}{
		{listen: "127.0.0.1:8080", want: "http://127.0.0.1:8080/healthz"},
		{listen: ":8080", want: "http://127.0.0.1:8080/healthz"},
		{listen: "0.0.0.0:9090", want: "http://127.0.0.1:9090/healthz"},
		{listen: "[::]:8080", want: "http://[::1]:8080/healthz"},
		{listen: "10.1.2.3:8080", want: "http://10.1.2.3:8080/healthz"},
		{listen: "intentd-0.example:8080", want: "http://intentd-0.example:8080/healthz"},
		{listen: "127.0.0.1:0", wantErr: "picks a free port"},
		{listen: "8080", wantErr: "--listen \"8080\""},
	} {
		t.Run(tc.listen, func(t *testing.T) {
			got, err := healthURL(tc.listen)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("healthURL(%q) = %q, %v; want an error naming %q", tc.listen, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("healthURL(%q) = %q, %v; want %q", tc.listen, got, err, tc.want)
			}
		})
	}
}

// runHealthcheck runs intentd --healthcheck with args and env as the environment,
// and returns what the check printed and what ParseFlags returned.
func runHealthcheck(args []string, env map[string]string) (string, error) {
	m := NewMain()
	out := &syncbuf.Buffer{}
	m.Stdout, m.Stderr = out, &syncbuf.Buffer{}
	m.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	err := m.ParseFlags(args)
	return out.String(), err
}

// TestHealthcheck starts the real server on a free port and checks it with
// --healthcheck, as the container image's HEALTHCHECK does: healthy while it serves
// (its address given by flag or by INTENTD_LISTEN, the form a container's check
// inherits), unhealthy once it stopped or when /healthz answers anything but 200.
// INTENTD_HEALTHCHECK alone starts a server's flags, never a check.
func TestHealthcheck(t *testing.T) {
	s := startServer(t, nil)
	addr := strings.TrimPrefix(s.url, "http://")
	_, port, _ := net.SplitHostPort(addr)

	t.Run("serving, by flag", func(t *testing.T) {
		out, err := runHealthcheck([]string{"--healthcheck", "--listen", addr}, nil)
		if err != flag.ErrHelp || !strings.Contains(out, "healthy: GET http://"+addr+"/healthz answered 200") {
			t.Fatalf("--healthcheck: %v, printed %q; want exit 0 and the answer", err, out)
		}
	})
	t.Run("serving, by INTENTD_LISTEN on every interface", func(t *testing.T) {
		out, err := runHealthcheck([]string{"--healthcheck"}, map[string]string{"INTENTD_LISTEN": ":" + port})
		if err != flag.ErrHelp || !strings.Contains(out, "answered 200") {
			t.Fatalf("--healthcheck with INTENTD_LISTEN=:%s: %v, printed %q; want exit 0", port, err, out)
		}
	})
	t.Run("INTENTD_HEALTHCHECK is not --healthcheck", func(t *testing.T) {
		out, err := runHealthcheck(nil, map[string]string{"INTENTD_HEALTHCHECK": "true"})
		if err != nil || out != "" {
			t.Fatalf("with INTENTD_HEALTHCHECK set: %v, printed %q; want a start's flags", err, out)
		}
	})
	t.Run("not 200", func(t *testing.T) {
		down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "internal error", http.StatusInternalServerError)
		}))
		defer down.Close()
		_, err := runHealthcheck([]string{"--healthcheck", "--listen", strings.TrimPrefix(down.URL, "http://")}, nil)
		if !errors.Is(err, errUnhealthy) || !strings.Contains(err.Error(), "answered 500") {
			t.Fatalf("--healthcheck of a server answering 500: %v; want unhealthy, naming the status", err)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		if err := s.m.Close(); err != nil {
			t.Fatal(err)
		}
		_, err := runHealthcheck([]string{"--healthcheck", "--listen", addr}, nil)
		if !errors.Is(err, errUnhealthy) || !strings.Contains(err.Error(), "/healthz") {
			t.Fatalf("--healthcheck of a stopped server: %v; want unhealthy, naming the URL", err)
		}
	})
}
