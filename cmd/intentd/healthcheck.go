package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// errUnhealthy marks the answer of --healthcheck when the server did not answer
// /healthz with 200: main exits 1, which container runtimes read as unhealthy (2 is
// theirs to reserve, and intentd's for a refused flag).
var errUnhealthy = errors.New("unhealthy")

// healthcheckTimeout bounds the whole check: a server that does not answer within it
// is as good as down to whoever asks, and the runtime's own time-out may be longer.
const healthcheckTimeout = 5 * time.Second

// healthURL is the /healthz of the server that --listen (or INTENTD_LISTEN) starts: on
// the same port, and on the loopback interface when it listens on every interface, so
// that the check made inside a container reaches the server of that container.
func healthURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("--healthcheck: --listen %q: %v", listen, err)
	}
	if port == "0" {
		return "", fmt.Errorf("--healthcheck: --listen %q picks a free port at each start, so the check cannot know it: give --listen (or INTENTD_LISTEN) a port", listen)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}

// healthcheck asks the server of --listen for /healthz, once, and writes what it
// answered to m.Stdout. It returns nil for a 200 and an error wrapping errUnhealthy
// for anything else, and starts nothing: it is the HEALTHCHECK of the container image,
// which has no shell nor curl to ask with.
func (m *Main) healthcheck() error {
	url, err := healthURL(m.Config.Listen)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("--healthcheck: %v", err)
	}
	// No proxy: the server asked about is this host's, whatever HTTP_PROXY says.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: GET %s: %v", errUnhealthy, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	answer := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: GET %s answered %d %s", errUnhealthy, url, resp.StatusCode, answer)
	}
	fmt.Fprintf(m.Stdout, "healthy: GET %s answered 200 %s\n", url, answer)
	return nil
}
