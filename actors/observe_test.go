package actors

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/intentd/intentd"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu          sync.Mutex
	transitions []string
	extractions []error
	provings    []string
}

func (r *recorder) observer() *intentd.Observer {
	return &intentd.Observer{
		Transition: func(to intentd.State, kind intentd.FailureKind) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.transitions = append(r.transitions, string(to)+"/"+string(kind))
		},
		Extraction: func(d time.Duration, err error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if d < 0 {
				panic("negative extraction time")
			}
			r.extractions = append(r.extractions, err)
		},
		Proving: func(d time.Duration, state intentd.State, kind intentd.FailureKind) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.provings = append(r.provings, string(state)+"/"+string(kind))
		},
	}
}

func (r *recorder) snapshot() (transitions []string, extractions []error, provings []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.transitions), slices.Clone(r.extractions), slices.Clone(r.provings)
}

// TestObserver checks that each durable transition and each proving run is reported
// once, with its outcome, for the success, failure and expiry paths.
func TestObserver(t *testing.T) {
	tests := []struct {
		name            string
		solution        string // "" lets the intent expire instead
		end             intentd.State
		wantTransitions []string
		wantExtractErr  bool
		wantProvings    []string
	}{
		{"success", "M-cheap", intentd.StateSuccess, []string{"open/", "processing/", "success/"}, false, []string{"success/"}},
		{"constraints", "M-dear", intentd.StateFailure, []string{"open/", "processing/", "failure/constraints"}, false, []string{"failure/constraints"}},
		{"extraction", "fail:x", intentd.StateFailure, []string{"open/", "processing/", "failure/extraction"}, true, []string{"failure/extraction"}},
		{"expired", "", intentd.StateExpired, []string{"open/", "expired/"}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			h := newHarness(t, func(c *Config) {
				c.Observer = rec.observer()
				if tt.solution == "" {
					c.IntentTTL = 20 * time.Millisecond
				}
			})
			id := h.submit("M", 3000)
			if tt.solution != "" {
				if err := proposeTo(h, id, tt.solution); err != nil {
					t.Fatal(err)
				}
			}
			h.waitState(id, tt.end)
			// The terminal transition is reported after the write that Status reads,
			// and proving after delivery: give both a moment.
			deadline := time.Now().Add(5 * time.Second)
			for {
				tr, _, pr := rec.snapshot()
				if len(tr) == len(tt.wantTransitions) && len(pr) == len(tt.wantProvings) || time.Now().After(deadline) {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			tr, ex, pr := rec.snapshot()
			if !slices.Equal(tr, tt.wantTransitions) {
				t.Errorf("transitions = %q, want %q", tr, tt.wantTransitions)
			}
			if !slices.Equal(pr, tt.wantProvings) {
				t.Errorf("provings = %q, want %q", pr, tt.wantProvings)
			}
			wantExtractions := 0
			if tt.solution != "" {
				wantExtractions = 1
			}
			if len(ex) != wantExtractions {
				t.Fatalf("extractions = %v, want %d", ex, wantExtractions)
			}
			if wantExtractions == 1 && (ex[0] != nil) != tt.wantExtractErr {
				t.Errorf("extraction error = %v, want an error: %v", ex[0], tt.wantExtractErr)
			}
		})
	}
}

// TestObserverNil checks that a nil Observer and one with no fields are both fine.
func TestObserverNil(t *testing.T) {
	for _, o := range []*intentd.Observer{nil, {}} {
		obs := observer(o)
		obs.Transition(intentd.StateOpen, "")
		obs.Extraction(time.Millisecond, nil)
		obs.Proving(time.Millisecond, intentd.StateSuccess, "")
		obs.Published()
	}
}
