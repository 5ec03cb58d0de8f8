package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/intentd/intentd/internal/redact"
)

// redacted stands for a secret in the command line the profiler shows; it is what
// net/url's Redacted puts for a password.
const redacted = redact.Mask

// urlFlags are the flags whose value is a URL, or a comma list of URLs, that may carry
// credentials in its user information: nats://user:password@host and nats://token@host
// are NATS clients' forms, and an evidence service may be given one too.
var urlFlags = []string{"store", "extractor-url"}

// startPprof serves the Go profiler on a listener of its own at addr, so that it is
// never reachable where the API is. It has no authentication, so beyond the loopback
// interface it is logged at warn. /debug/pprof/cmdline is served by a handler of this
// file, which redacts the secrets on the command line; the other routes are
// net/http/pprof's own.
func (m *Main) startPprof(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--pprof: %w", err)
	}
	args := m.cmdline
	if args == nil {
		args = os.Args
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.Handle("/debug/pprof/cmdline", cmdlineHandler(args))
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	m.pprof = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go m.pprof.Serve(ln)
	u := "http://" + ln.Addr().String() + "/debug/pprof/"
	if loopback(ln.Addr()) {
		m.logger.Info("serving the profiler", "url", u)
	} else {
		m.logger.Warn("serving the profiler beyond the loopback interface, with no authentication: anyone who reaches this address reads the process's memory profiles, goroutine stacks and command line; keep --pprof on 127.0.0.1 or behind a tunnel",
			"url", u, "pprof", addr)
	}
	return nil
}

// cmdlineHandler answers as net/http/pprof's Cmdline does, the arguments separated by
// NUL bytes, but with the secrets in them redacted: the profiler has no authentication,
// and a token given on the command line would otherwise be one request away.
func cmdlineHandler(args []string) http.Handler {
	body := strings.Join(redactArgs(args), "\x00")
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, body)
	})
}

// redactArgs returns a copy of a command line (the program's name first) with the value
// of every secret flag replaced by redacted, in each form the flag package reads:
// -name value, --name value, -name=value and --name=value; and the user information of
// every URL flag's URLs replaced likewise. Every argument is looked at, past a stray
// one or a "--" as well, since a command line that intentd refused is no concern here
// and one secret too many redacted costs nothing.
func redactArgs(args []string) []string {
	secret := map[string]bool{}
	for _, s := range (&Config{}).secretFlags() {
		secret[s.name] = true
	}
	isURL := map[string]bool{}
	for _, name := range urlFlags {
		isURL[name] = true
	}
	out := make([]string, len(args))
	copy(out, args)
	for i := 1; i < len(out); i++ {
		name, value, hasValue, ok := flagArg(out[i])
		if !ok || (!secret[name] && !isURL[name]) {
			continue
		}
		redact := func(v string) string {
			if secret[name] {
				return redacted
			}
			return redact.URLs(v)
		}
		switch {
		case hasValue:
			out[i] = out[i][:len(out[i])-len(value)] + redact(value)
		case i+1 < len(out):
			i++
			out[i] = redact(out[i])
		}
	}
	return out
}

// flagArg splits an argument that is a flag, -name or --name with =value or not, as the
// flag package reads it.
func flagArg(arg string) (name, value string, hasValue, ok bool) {
	name, ok = strings.CutPrefix(arg, "-")
	if !ok {
		return "", "", false, false
	}
	name = strings.TrimPrefix(name, "-")
	if name == "" || name[0] == '-' || name[0] == '=' {
		return "", "", false, false
	}
	name, value, hasValue = strings.Cut(name, "=")
	return name, value, hasValue, true
}
