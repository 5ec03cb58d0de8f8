package natsstore

import (
	"fmt"
	"reflect"
	"testing"
)

// TestIndexRebuiltAfterBurst fills the index of open intents as a burst does, takes
// most of them out as they are decided, and checks that the index is a new map once a
// quarter is left, holding exactly the intents still open, and that it is left alone
// before then.
func TestIndexRebuiltAfterBurst(t *testing.T) {
	cases := []struct {
		name    string
		open    int // intents put in the index
		decided int // of them, taken out
		rebuilt bool
	}{
		{"a small index is never rebuilt", 1000, 1000, false},
		{"half decided: kept", 4000, 2000, false},
		{"three quarters decided: rebuilt", 4000, 3000, true},
		{"all decided: rebuilt", 4000, 4000, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Store{intents: make(map[string]*entry)}
			id := func(i int) string { return fmt.Sprintf("intent-%05d", i) }
			for i := range c.open {
				s.putIntent(id(i), &entry{seq: uint64(i + 1), phase: phaseOpen})
			}
			first := reflect.ValueOf(s.intents).UnsafePointer()
			for i := range c.decided {
				s.forgetIntent(id(i))
			}
			if rebuilt := reflect.ValueOf(s.intents).UnsafePointer() != first; rebuilt != c.rebuilt {
				t.Errorf("index rebuilt: %v, want %v", rebuilt, c.rebuilt)
			}
			if len(s.intents) != c.open-c.decided {
				t.Fatalf("index holds %d intents, want %d", len(s.intents), c.open-c.decided)
			}
			for i := c.decided; i < c.open; i++ {
				if e := s.intents[id(i)]; e == nil || e.seq != uint64(i+1) {
					t.Fatalf("intent %d still open is %+v in the index", i, e)
				}
			}
		})
	}
}
