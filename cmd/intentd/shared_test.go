package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/intentd/intentd/natsstore"
)

// TestNodesShareOneStream runs three intentd on one NATS stream, as nodes of one
// service: intents are submitted to each in turn, each proposed to on another node and
// read on the third. Every outcome is right wherever it is read, every intent has one
// event, and every node's stream gives the same events in the same order. Writes are
// fenced by the store, so a node whose view of an intent is old is refused and answers
// from what the other wrote.
func TestNodesShareOneStream(t *testing.T) {
	t.Parallel()
	ownStores(t)
	srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	args := []string{"--store", srv.URL(), "--nats-prefix", "shared"}
	nodes := make([]*testServer, 3)
	for i := range nodes {
		nodes[i] = startServer(t, args)
	}
	const n = 30
	solutions := []string{solutionPasses, solutionBlackL, solutionUnknown}
	wants := []string{"success", "failure", "failure"}
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		ids[i] = nodes[i%3].submit()
	}
	for i, id := range ids {
		wg.Go(func() {
			if r := nodes[(i+1)%3].propose(id, solutions[i%3]); r.status != http.StatusOK {
				t.Errorf("proposal to another node: %s", r)
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		nodes[(i+2)%3].waitStatus(id, wants[i%3])
	}
	// A second proposal, to any node, is refused: the intent has its one proposal.
	for i, node := range nodes {
		if r := node.propose(ids[i], solutionPasses); r.status != http.StatusConflict {
			t.Errorf("second proposal of %s to node %d: %s, want 409", ids[i], i, r)
		}
	}
	var logs [3][]string
	for k, node := range nodes {
		ctx, cancel := context.WithCancel(context.Background())
		st := node.openStream(ctx, "")
		seen := map[string]bool{}
		for range n {
			ev, err := st.next()
			if err != nil {
				t.Fatalf("node %d's stream: %v", k, err)
			}
			o := decodeOutcome(t, ev)
			if seen[o.IntentID] {
				t.Fatalf("node %d's stream has two events of %s", k, o.IntentID)
			}
			seen[o.IntentID] = true
			logs[k] = append(logs[k], fmt.Sprintf("%s:%s", ev.id, o.IntentID))
		}
		cancel()
		st.close()
	}
	if !slices.Equal(logs[0], logs[1]) || !slices.Equal(logs[0], logs[2]) {
		t.Fatalf("the nodes' streams differ:\n%v\n%v\n%v", logs[0], logs[1], logs[2])
	}
}
