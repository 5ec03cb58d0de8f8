package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/client"
)

func (c *cli) watch(args []string) error {
	fs := c.flags("watch")
	var intents listFlag
	fs.Var(&intents, "intent", "only this intent's events (repeat for several)")
	from := fs.Uint64("from", 0, "start after this event id (0: every retained event)")
	untilTerminal := fs.Bool("until-terminal", false, "with --intent: exit once every watched intent has ended (status 0 when all succeeded, 5 otherwise)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if err := want(pos, 0, "only flags"); err != nil {
		return err
	}
	if *untilTerminal && len(intents) == 0 {
		return usagef("--until-terminal needs the intents to wait for: --intent ID")
	}
	for _, id := range intents {
		if _, ok := intentd.CanonicalIntentID(id); !ok {
			return usagef("--intent %q: want a UUID", id)
		}
	}
	api, err := c.api()
	if err != nil {
		return err
	}

	// last starts at --from: a stream that drops before its first event resumes there.
	w := &watcher{c: c, pending: map[string]bool{}, ended: map[string]intentd.State{}, last: *from}
	for _, id := range intents {
		w.pending[strings.ToLower(id)] = true
	}
	if isTerminal(c.stdout) {
		w.spin = newSpinner(c.stdout)
		defer w.spin.stop()
	}

	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	stream, err := api.Events(ctx, client.StreamOptions{
		From:      *from,
		IntentIDs: intents,
		OnReconnect: func(err error, attempt int) {
			w.spin.clear()
			fmt.Fprintf(c.stderr, "intentctl watch: the stream dropped (%v); resuming after event %d (attempt %d)\n", err, w.last, attempt)
		},
	})
	if err != nil {
		return c.reach(err)
	}
	defer stream.Close()

	if *untilTerminal {
		// Asked once the stream stands, so that an intent ending now is either in
		// its status or on the stream: never in neither.
		for _, id := range intents {
			rctx, rcancel := c.call()
			st, err := api.Status(rctx, id)
			rcancel()
			if err != nil {
				return c.reach(err)
			}
			if st.State.Terminal() {
				w.show(0, st)
			}
		}
		if w.done() {
			return w.summary()
		}
	}
	for {
		w.spin.wait(len(w.pending), *untilTerminal)
		ev, err := stream.Next()
		if err != nil {
			if errors.Is(err, context.Canceled) && c.ctx.Err() != nil {
				return nil // interrupted: a normal end of an open-ended watch
			}
			return c.reach(err)
		}
		w.last = ev.ID
		out, err := ev.Outcome()
		if err != nil {
			fmt.Fprintf(c.stderr, "intentctl watch: %v\n", err)
			continue
		}
		w.show(ev.ID, out)
		if *untilTerminal && w.done() {
			return w.summary()
		}
	}
}

// watcher prints outcomes and keeps track of the intents still awaited.
type watcher struct {
	c       *cli
	spin    *spinner
	last    uint64
	pending map[string]bool
	ended   map[string]intentd.State
}

// show prints one outcome, once per intent: an intent already shown from its status
// is not shown again when its event is replayed.
func (w *watcher) show(id uint64, st *client.IntentStatus) {
	key := strings.ToLower(st.IntentID)
	if _, seen := w.ended[key]; seen {
		return
	}
	w.spin.clear()
	if w.c.g.json {
		fmt.Fprintf(w.c.stdout, "{\"id\":%d,\"outcome\":%s}\n", id, compactJSON(st))
	} else {
		prefix := "#" + strconv.FormatUint(id, 10) + " "
		if id == 0 {
			prefix = "(status) "
		}
		printOutcome(w.c.stdout, prefix, st)
	}
	if w.pending[key] {
		w.ended[key] = st.State
		delete(w.pending, key)
	}
}

func (w *watcher) done() bool { return len(w.pending) == 0 }

// summary says how the watched intents ended, and picks the exit status.
func (w *watcher) summary() error {
	w.spin.clear()
	counts := map[intentd.State]int{}
	for _, s := range w.ended {
		counts[s]++
	}
	var parts []string
	for _, s := range []intentd.State{intentd.StateSuccess, intentd.StateFailure, intentd.StateExpired} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	sort.Strings(parts)
	msg := fmt.Sprintf("all %d watched intent(s) ended: %s", len(w.ended), strings.Join(parts, ", "))
	if !w.c.g.json {
		fmt.Fprintln(w.c.stdout, msg)
	}
	if counts[intentd.StateSuccess] != len(w.ended) {
		return &exitError{exitNotAllWon, errors.New(msg + "; not all succeeded")}
	}
	return nil
}

// spinner shows that watch is waiting, on a terminal only. A nil spinner does nothing.
type spinner struct {
	w      io.Writer
	mu     sync.Mutex
	text   string
	shown  bool
	frame  int
	ticker *time.Ticker
	quit   chan struct{}
}

func newSpinner(w io.Writer) *spinner {
	s := &spinner{w: w, ticker: time.NewTicker(120 * time.Millisecond), quit: make(chan struct{})}
	go func() {
		for {
			select {
			case <-s.quit:
				return
			case <-s.ticker.C:
				s.mu.Lock()
				if s.text != "" {
					s.frame++
					fmt.Fprintf(s.w, "\r%c %s", `|/-\`[s.frame%4], s.text)
					s.shown = true
				}
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// wait sets what is awaited.
func (s *spinner) wait(pending int, untilTerminal bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text = "waiting for events"
	if untilTerminal {
		s.text = fmt.Sprintf("waiting for %d intent(s) to end", pending)
	}
}

// clear removes the spinner's line before other output.
func (s *spinner) clear() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		fmt.Fprint(s.w, "\r\033[K")
		s.shown = false
	}
	s.text = ""
}

func (s *spinner) stop() {
	if s == nil {
		return
	}
	s.clear()
	s.ticker.Stop()
	close(s.quit)
}
