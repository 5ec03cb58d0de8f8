package main_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestClusterKillsUnderLoad kills one node of three with SIGKILL while intents are
// submitted and proposed to through every node and a subscriber reads each node's
// stream; the node comes back and rejoins, and then the next one is killed, five
// times: the first two times the node alone, then the node and its NATS server. Every intent acknowledged reaches the outcome its acknowledged
// proposal calls for, none stays processing, every node's stream holds each outcome
// once in one order, and the subscribers of a killed node resume on another with no
// gap and no duplicate.
func TestClusterKillsUnderLoad(t *testing.T) {
	r := startRig(t)

	// Which nodes are up, and where: a restarted node listens on a new port.
	var upMu sync.Mutex
	up := []bool{true, true, true}
	urls := []string{r.nodes[0].url, r.nodes[1].url, r.nodes[2].url}
	// node returns the URL of the k-th node that is up, counting from any index.
	node := func(k int) (int, string) {
		upMu.Lock()
		defer upMu.Unlock()
		for i := range 3 {
			if j := (k + i) % 3; up[j] {
				return j, urls[j]
			}
		}
		return -1, ""
	}

	ctx, stopReading := context.WithCancel(context.Background())
	defer stopReading()
	// One subscriber starts on each node; when its node dies it resumes on the next.
	type subscriber struct {
		mu    sync.Mutex
		evs   []sseEvent
		moves int
	}
	subs := make([]*subscriber, 3)
	var readers sync.WaitGroup
	for k := range subs {
		s := &subscriber{}
		subs[k] = s
		readers.Go(func() {
			at := k
			for ctx.Err() == nil {
				j, url := node(at)
				if j != at {
					s.mu.Lock()
					s.moves++
					s.mu.Unlock()
				}
				at = j
				s.mu.Lock()
				var after uint64
				if len(s.evs) > 0 {
					after = s.evs[len(s.evs)-1].id
				}
				s.mu.Unlock()
				stream(ctx, url, after, func(ev sseEvent) {
					s.mu.Lock()
					s.evs = append(s.evs, ev)
					s.mu.Unlock()
				})
				time.Sleep(50 * time.Millisecond)
			}
		})
	}

	// propose proposes the one solution to an intent through the nodes that are up,
	// trying again every 100 ms while it is refused for want of an owner, and says when
	// it was accepted.
	propose := func(k int, id string) (time.Time, bool) {
		ambiguous := false
		for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
			_, via := node(k)
			code, why := call(via+"/intents/"+id+"/proposal", fmt.Appendf(nil, `{"solution":%q}`, crashSolutions[0]))
			if code == http.StatusOK || code == http.StatusConflict && ambiguous && strings.HasPrefix(why, "proposal_exists") {
				return time.Now(), true
			}
			if code != http.StatusServiceUnavailable && code != 0 || time.Since(start) > 30*time.Second {
				t.Errorf("proposal of %s through %s: %d %s", id, via, code, why)
				return time.Time{}, false
			}
			ambiguous = true // a node that died with the request may have taken it
		}
	}
	// The load: workers submit through one node and propose through the next, retrying
	// what a dying node left unanswered. Only what was answered 200 counts as acknowledged.
	var ledgerMu sync.Mutex
	proposed := map[string]bool{} // acknowledged intents, and whether a proposal was
	var stop atomic.Bool
	var workers sync.WaitGroup
	for w := range 4 {
		workers.Go(func() {
			for i := 0; !stop.Load(); i++ {
				j, via := node(w + i)
				id, body := r.intent()
				if code, _ := call(via+"/intents", body); code != http.StatusOK {
					time.Sleep(50 * time.Millisecond)
					continue // refused, or unanswered: not acknowledged either way
				}
				ledgerMu.Lock()
				proposed[id] = false
				ledgerMu.Unlock()
				if i%4 == 3 {
					continue // left open
				}
				if _, ok := propose(j+1, id); ok {
					ledgerMu.Lock()
					proposed[id] = true
					ledgerMu.Unlock()
				}
			}
		})
	}

	// A test that fails on the way stops its workers before it ends.
	defer func() {
		stop.Store(true)
		workers.Wait()
	}()
	const rounds, probes = 5, 12
	for round := range rounds {
		time.Sleep(3 * time.Second)
		victim := (round + 2) % 3
		withNATS := round > 1
		what := "its NATS server kept running"
		if withNATS {
			what = fmt.Sprintf("the NATS server killed with it led %v", r.ledBy(fmt.Sprintf("m%d", victim)))
		}
		// Open intents on every node, some of them the victim's to serve: proposed to
		// after the kill, those wait for the members to place them elsewhere, and
		// when the first of them is accepted is the time the cluster takes to serve a
		// dead node's intents again.
		open := make([]string, probes)
		for i := range open {
			_, via := node(i)
			id, body := r.intent()
			if code, why := call(via+"/intents", body); code != http.StatusOK {
				t.Fatalf("intent through %s before the kill: %d %s", via, code, why)
			}
			open[i] = id
		}
		upMu.Lock()
		up[victim] = false
		upMu.Unlock()
		killed := time.Now()
		r.nodes[victim].kill()
		if withNATS {
			r.members[victim].kill()
		}
		took := make([]time.Duration, probes)
		var probing sync.WaitGroup
		for i, id := range open {
			probing.Go(func() {
				if at, ok := propose(victim+1+i, id); ok {
					took[i] = at.Sub(killed)
				}
			})
		}
		probing.Wait()
		ledgerMu.Lock()
		for _, id := range open {
			proposed[id] = true
		}
		ledgerMu.Unlock()
		var waited []time.Duration
		for _, d := range took {
			if d >= time.Second {
				waited = append(waited, d)
			}
		}
		slices.Sort(waited)
		if len(waited) == 0 {
			t.Logf("kill %d (%s): all %d proposals accepted within 1 s of the kill, none of them waited for the dead node", round+1, what, probes)
		} else {
			t.Logf("kill %d (%s): %d of %d proposals waited for the dead node's intents to move; the first was accepted %v after the kill, the last %v",
				round+1, what, len(waited), probes, waited[0].Round(10*time.Millisecond), waited[len(waited)-1].Round(10*time.Millisecond))
		}
		time.Sleep(time.Until(killed.Add(5 * time.Second)))
		if withNATS {
			r.members[victim].start()
		}
		r.nodes[victim].start()
		upMu.Lock()
		up[victim], urls[victim] = true, r.nodes[victim].url
		upMu.Unlock()
		waitMembers(t, r.nodes, 3)
	}
	time.Sleep(2 * time.Second)
	stop.Store(true)
	workers.Wait()

	ledgerMu.Lock()
	defer ledgerMu.Unlock()
	statuses := map[string]string{}
	for id, p := range proposed {
		if p {
			waitTerminal(t, r.nodes[0].url, id, "success")
			statuses[id] = "success"
		} else if st := getStatus(t, r.nodes[1].url, id); st != "open" {
			t.Errorf("intent %s, never proposed to, is %s", id, st)
		}
	}
	if len(statuses) < 30 {
		t.Fatalf("only %d proposals acknowledged: the load did not run", len(statuses))
	}
	var full []sseEvent
	for k, n := range r.nodes {
		evs := readN(t, n.url, len(statuses))
		checkEvents(t, fmt.Sprintf("node %d", k), evs, statuses, false)
		if len(evs) != len(statuses) {
			t.Fatalf("node %d's stream has %d events for %d outcomes", k, len(evs), len(statuses))
		}
		if k == 0 {
			full = evs
		} else if fmt.Sprint(evs) != fmt.Sprint(full) {
			t.Fatalf("node %d's stream differs from node 0's", k)
		}
	}
	// The subscribers catch up, then each has read the whole stream once, in order.
	deadline := time.Now().Add(30 * time.Second)
	for k, s := range subs {
		for {
			s.mu.Lock()
			n := len(s.evs)
			s.mu.Unlock()
			if n >= len(full) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		s.mu.Lock()
		checkEvents(t, fmt.Sprintf("subscriber %d", k), s.evs, nil, false)
		if fmt.Sprint(s.evs) != fmt.Sprint(full) {
			t.Errorf("subscriber %d (moved %d times) read %d events, want the %d of the stream, in its order", k, s.moves, len(s.evs), len(full))
		}
		s.mu.Unlock()
	}
	stopReading()
	readers.Wait()
	open := len(proposed) - len(statuses)
	t.Logf("%d intents acknowledged, %d of them proposed to and decided, %d left open, across %d kills", len(proposed), len(statuses), open, rounds)
}
