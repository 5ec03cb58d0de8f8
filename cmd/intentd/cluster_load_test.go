package main_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestClusterKillsUnderLoad kills one node of three, and its NATS server, with SIGKILL
// while intents are submitted and proposed to through every node and a subscriber
// reads each node's stream; the node comes back and rejoins, and then the next one is
// killed, three times. Every intent acknowledged reaches the outcome its acknowledged
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

	// The load: workers submit through one node and propose through the next, retrying
	// what a dying node left unanswered. Only what was answered 200 counts as acknowledged.
	var ledgerMu sync.Mutex
	proposed := map[string]bool{} // acknowledged intents, and whether a proposal was
	var slow []time.Time          // when the proposals that took a second or more were accepted
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
				ambiguous := false
				sent := time.Now()
				for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
					_, other := node(j + 1)
					code, why := call(other+"/intents/"+id+"/proposal", fmt.Appendf(nil, `{"solution":%q}`, crashSolutions[0]))
					if code == http.StatusOK || code == http.StatusConflict && ambiguous && strings.HasPrefix(why, "proposal_exists") {
						ledgerMu.Lock()
						proposed[id] = true
						if time.Since(sent) >= time.Second {
							slow = append(slow, time.Now())
						}
						ledgerMu.Unlock()
						break
					}
					if code != http.StatusServiceUnavailable && code != 0 || time.Since(start) > 30*time.Second {
						t.Errorf("proposal of %s through %s: %d %s", id, other, code, why)
						break
					}
					ambiguous = true // a node that died with the request may have taken it
				}
			}
		})
	}

	// A test that fails on the way stops its workers before it ends.
	defer func() {
		stop.Store(true)
		workers.Wait()
	}()
	kills := make([]time.Time, 3)
	led := make([][]string, 3) // what the killed NATS server led
	for round := range 3 {
		time.Sleep(3 * time.Second)
		victim := (round + 2) % 3
		led[round] = r.ledBy(fmt.Sprintf("m%d", victim))
		upMu.Lock()
		up[victim] = false
		upMu.Unlock()
		kills[round] = time.Now()
		r.nodes[victim].kill()
		r.members[victim].kill()
		time.Sleep(5 * time.Second)
		r.members[victim].start()
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
	// A proposal that took a second or more after a kill was waiting for the dead
	// node's intents to find a new owner: the first and the last of them accepted say
	// how long those intents were out of reach.
	for round, at := range kills {
		var first, last time.Duration
		for _, ok := range slow {
			if ok.Before(at) || round+1 < len(kills) && ok.After(kills[round+1]) {
				continue
			}
			if d := ok.Sub(at); first == 0 || d < first {
				first = d
			}
			last = max(last, ok.Sub(at))
		}
		t.Logf("kill %d (the NATS server killed led %v): of the proposals that waited, the first was accepted %v after the kill, the last %v",
			round+1, led[round], first.Round(10*time.Millisecond), last.Round(10*time.Millisecond))
	}
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
	t.Logf("%d intents acknowledged, %d of them proposed to and decided, %d left open, across 3 kills", len(proposed), len(statuses), open)
}
