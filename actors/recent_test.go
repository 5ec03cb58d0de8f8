package actors

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd"
)

func recentSnap(id string, authored int) *snapshot {
	return &snapshot{V: snapshotVersion, ID: id, PolicyID: "p", Authored: []byte(strings.Repeat("x", authored))}
}

func TestRecentIntents(t *testing.T) {
	size := func(s *snapshot) int { return snapshotWeight + len(s.ID) + len(s.PolicyID) + len(s.Authored) }
	one := size(recentSnap("id-0", 1000))
	for _, tc := range []struct {
		name   string
		budget int
		run    func(r *recentIntents) []string // the ids taken, in order, "" for none
		want   []string
		held   int
	}{
		{"a snapshot is taken once", 10 * one, func(r *recentIntents) []string {
			r.put(recentSnap("a", 1000))
			return []string{takeID(r, "a"), takeID(r, "a")}
		}, []string{"a", ""}, 0},
		{"the older generation goes when the newer is full", 4 * one, func(r *recentIntents) []string {
			// Generations of two: id-0 and id-1, then id-2 and id-3, then id-4, which
			// drops the first.
			for i := range 5 {
				r.put(recentSnap(fmt.Sprintf("id-%d", i), 1000))
			}
			return []string{takeID(r, "id-0"), takeID(r, "id-1"), takeID(r, "id-2"), takeID(r, "id-4")}
		}, []string{"", "", "id-2", "id-4"}, 1},
		{"a snapshot put again is taken once, the newer", 4 * one, func(r *recentIntents) []string {
			r.put(recentSnap("id-0", 1000))
			r.put(recentSnap("id-1", 1000))
			r.put(recentSnap("id-2", 1000)) // the first two are now the older generation
			again := recentSnap("id-0", 1000)
			again.PolicyID = "q" // told apart from the first, at the same size
			r.put(again)
			s := r.take("id-0")
			if s != again {
				return []string{"not the newer"}
			}
			return []string{s.ID, takeID(r, "id-0"), takeID(r, "id-1"), takeID(r, "id-2")}
		}, []string{"id-0", "", "id-1", "id-2"}, 0},
		{"one larger than the budget is not held", one - 1, func(r *recentIntents) []string {
			r.put(recentSnap("id-0", 1000))
			return []string{takeID(r, "id-0")}
		}, []string{""}, 0},
		{"no budget holds none", 0, func(r *recentIntents) []string {
			r.put(recentSnap("a", 10))
			return []string{takeID(r, "a")}
		}, []string{""}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecentIntents(tc.budget)
			got := tc.run(r)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("taken %q, want %q", got, tc.want)
			}
			if n, bytes := r.stats(); n != tc.held || bytes > tc.budget {
				t.Fatalf("%d held in %d bytes, want %d within %d", n, bytes, tc.held, tc.budget)
			}
		})
	}
}

func takeID(r *recentIntents, id string) string {
	if s := r.take(id); s != nil {
		return s.ID
	}
	return ""
}

// TestRecentIntentsHoldTheNewest puts many more snapshots than the budget holds, some
// taken at once as by a proposal that follows its create: the bytes held stay within
// the budget, and the newest half of the budget's worth can be taken.
func TestRecentIntentsHoldTheNewest(t *testing.T) {
	const budget = 1 << 20
	r := newRecentIntents(budget)
	size := snapshotWeight + len("id-00000") + len("p") + 100
	for i := range 100_000 {
		id := fmt.Sprintf("id-%05d", i)
		r.put(recentSnap(id, 100))
		if i%3 == 0 && r.take(id) == nil {
			t.Fatalf("%s not held", id)
		}
		if n, bytes := r.stats(); bytes > budget || n*size != bytes {
			t.Fatalf("after %d puts: %d held in %d bytes, budget %d", i+1, n, bytes, budget)
		}
	}
	newest := budget / 2 / size
	for i := 100_000 - newest; i < 100_000; i++ {
		id := fmt.Sprintf("id-%05d", i)
		if s := r.take(id); (s == nil) != (i%3 == 0) {
			t.Fatalf("%s: taken %v, want held unless taken before", id, s != nil)
		}
	}
}

// TestRecentIntentStartsTheActor checks that the actor of an intent created moments
// ago starts from the snapshot in memory, and that one passivated after its proposal
// comes back from the store with the proposal and its outcome.
func TestRecentIntentStartsTheActor(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PassivateAfter = 20 * time.Millisecond })
	id := h.submit("M", 2500)
	if n, _ := h.e.recent.stats(); n != 1 {
		t.Fatalf("%d snapshots held after a create, want 1", n)
	}
	if err := proposeTo(h, id, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.e.recent.stats(); n != 0 {
		t.Fatalf("%d snapshots held after the proposal, want 0", n)
	}
	h.waitState(id, intentd.StateSuccess)
	// Passivated or retired, the actor reads the store: a second proposal is refused
	// for the proposal the store holds, not taken for the first.
	time.Sleep(100 * time.Millisecond)
	err := h.e.Propose(context.Background(), id, intentd.Proposal{Solution: "M-cheap"}, nil)
	wantCode(t, err, intentd.KindConflict, intentd.CodeProposalExists)
}
