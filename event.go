package intentd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Event is one outcome on the event stream (spec part 6): its id, its type, its intent
// and the one-line JSON of the OrchestratorEvent. The type and the intent id travel
// beside the JSON so that filtering an event never reads it again.
type Event struct {
	ID       uint64
	Type     State
	IntentID string
	At       time.Time
	Data     []byte
	// Decided is what the node that wrote a terminal event knows of it beyond its
	// JSON, handed to that node's own subscribers in memory: no store keeps it, and an
	// event read back from one has none.
	Decided *Decided
}

// Decided is the part of a decision that its event carries beyond its JSON: in memory
// on the node that made it, and, of the receipt, its digest through a store that keeps
// it beside the event (NATS), so that every node of a cluster has it. The transparency
// log takes each outcome's receipt digest from here rather than read the intent's
// snapshot back, which cost a twentieth of a proposal on one node and, in a cluster,
// one read of the store for every outcome on every member.
type Decided struct {
	// Receipt is the outcome's signed receipt as stored with its snapshot; nil when
	// the outcome has none, or when the event was read back from a store.
	Receipt json.RawMessage
	// ReceiptDigest is crypto.Digest of Receipt, the receipt_digest of the outcome's
	// log entry; empty when the outcome has no receipt. A Decided with a Receipt and
	// no ReceiptDigest has not had it computed.
	ReceiptDigest string
}

// Digest is the outcome's receipt digest (empty for an outcome without a receipt),
// and whether d knows it: a nil Decided, or one with a receipt whose digest was not
// computed, does not, and the receipt is then read from the intent's snapshot.
func (d *Decided) Digest() (digest string, known bool) {
	if d == nil || (d.ReceiptDigest == "" && len(d.Receipt) > 0) {
		return "", false
	}
	return d.ReceiptDigest, true
}

// NewEvent is the event of a terminal status, without its id and time, which the store
// gives it when it is written.
func NewEvent(s Status) (Event, error) {
	if !s.State.Terminal() {
		return Event{}, fmt.Errorf("an event is of a terminal status, not %q", s.State)
	}
	data, err := s.marshal("type", string(s.State))
	if err != nil {
		return Event{}, err
	}
	return Event{Type: s.State, IntentID: s.IntentID, Data: data}, nil
}

// DecodeEvent reads the type and intent id of an event's stored JSON, for a store that
// keeps only the JSON. Its cost is a scan of the event's top level.
func DecodeEvent(id uint64, at time.Time, data []byte) (Event, error) {
	ev := Event{ID: id, At: at, Data: data}
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
		return Event{}, fmt.Errorf("event %d is corrupt: not a JSON object", id)
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return Event{}, fmt.Errorf("event %d is corrupt: %w", id, err)
		}
		key := name.String()
		switch key {
		case "type", "intent_id":
			v, err := dec.ReadToken()
			if err != nil || v.Kind() != '"' {
				return Event{}, fmt.Errorf("event %d is corrupt: %s is not a string", id, key)
			}
			if key == "type" {
				ev.Type = State(v.String())
			} else {
				ev.IntentID = v.String()
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return Event{}, fmt.Errorf("event %d is corrupt: %w", id, err)
			}
		}
	}
	if !ev.Type.Terminal() || ev.IntentID == "" {
		return Event{}, fmt.Errorf("event %d is corrupt: no terminal type or no intent_id", id)
	}
	return ev, nil
}

// Filter selects events; an empty field selects all.
type Filter struct {
	IntentIDs []string
	Types     []State
	// Patient marks a subscriber that takes its events a little late as well as at
	// once: the transparency log, which signs a checkpoint a second. It selects nothing.
	// A store that hands events on a window at a time (EventPacer) keeps its windows
	// short only while a subscriber that is not patient follows the events.
	Patient bool
}

// Match reports whether the filter selects ev.
func (f Filter) Match(ev Event) bool {
	if len(f.IntentIDs) > 0 && !slices.Contains(f.IntentIDs, ev.IntentID) {
		return false
	}
	if len(f.Types) > 0 && !slices.Contains(f.Types, ev.Type) {
		return false
	}
	return true
}
