package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSlowClientHeaders: a client that sends its headers a byte at a time is cut off by
// the read-header time-out, and while it dawdles every other request is served.
func TestSlowClientHeaders(t *testing.T) {
	// Not parallel: races a 300ms header time-out against writes 20ms apart.
	s := startServer(t, nil, func(m *Main) { m.HTTP.ReadHeaderTimeout = 300 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// Far more header than the time-out lets through at one byte every 20 ms.
	header := "GET /info HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 5000) + "\r\n\r\n"
	closed := make(chan error, 1)
	go func() {
		for i := range len(header) {
			if _, err := conn.Write([]byte{header[i]}); err != nil {
				closed <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		closed <- nil
	}()

	for range 20 {
		if r := s.do("GET", "/info", "", nil); r.status != http.StatusOK {
			t.Fatalf("GET /info while a client dawdles: %s", r)
		}
	}
	// The server answers the slow client (408, or just a close) and closes the connection.
	// Closed with bytes of the header still unread, the connection may end in a reset
	// rather than an end of stream: either way the server let go of it. A time-out is
	// the failure.
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadAll(conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the server did not close the dawdling connection: %v", err)
	}
	if err := <-closed; err == nil {
		t.Fatal("the whole header was accepted at one byte every 20 ms")
	}
}

// TestSlowClientNeverReads: an event-stream client that never reads does not hold back
// another subscriber or the requests that make the events.
func TestSlowClientNeverReads(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(1024)
	if _, err := io.WriteString(conn, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	const n = 100
	for range n {
		id := s.submit()
		if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
			t.Fatalf("propose while a subscriber does not read: %s", r)
		}
	}
	got := 0
	sc := bufio.NewScanner(resp.Body)
	for got < n && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "id: ") {
			got++
		}
	}
	if got != n {
		t.Fatalf("the reading subscriber got %d of %d events (%v)", got, n, sc.Err())
	}
}
