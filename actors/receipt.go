package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/intentd/intentd"
)

// Receipt returns the signed receipt of a decided intent as it was stored (the JSON of
// a crypto.SignedReceipt), or nil when its outcome has none: what the transparency log
// binds each outcome to. It reads only the snapshot's receipt, without the checks,
// the bytecode and the decoding Proof adds, because the log asks for every outcome:
// with Proof, the log cost the decide path a sixth of its server CPU, most of it in
// decoding the whole snapshot and the receipt.
func (e *Engine) Receipt(ctx context.Context, id string) (json.RawMessage, error) {
	data, err := e.store.Intent(ctx, id)
	if errors.Is(err, intentd.ErrNotFound) {
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeIntentNotFound, "intent %s not found", id)
	}
	if err != nil {
		return nil, storeFailed("read intent: %w", err)
	}
	var state intentd.State
	var receipt json.RawMessage
	if snapshotIsJSON(data) {
		var v int64
		v, state, receipt, err = snapshotReceipt(data)
		if err == nil && v != 1 {
			err = fmt.Errorf("version %d in JSON, want 1", v)
		}
	} else {
		var s *snapshot
		if s, err = decodeSnapshotWire(data); err == nil {
			state, receipt = s.State, s.Receipt
		}
	}
	if err != nil {
		return nil, intentd.Internal("decode snapshot: %w", fmt.Errorf("%s: %w", id, err))
	}
	if !state.Terminal() {
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeProofNotReady, "intent %s is %s", id, state)
	}
	return receipt, nil
}

// snapshotReceipt reads a JSON snapshot's version, state and receipt, skipping the
// rest (the evidence, the intent) unread: a third of the cost of decoding it all.
func snapshotReceipt(data []byte) (v int64, state intentd.State, receipt json.RawMessage, err error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
		return 0, "", nil, errors.New("not a JSON object")
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return 0, "", nil, err
		}
		switch name.String() {
		case "v":
			t, err := dec.ReadToken()
			if err != nil || t.Kind() != '0' {
				return 0, "", nil, errors.New("v is not a number")
			}
			if v, err = t.Int(); err != nil {
				return 0, "", nil, fmt.Errorf("v: %w", err)
			}
		case "state":
			t, err := dec.ReadToken()
			if err != nil || t.Kind() != '"' {
				return 0, "", nil, errors.New("state is not a string")
			}
			state = intentd.State(t.String())
		case "receipt":
			r, err := dec.ReadValue()
			if err != nil {
				return 0, "", nil, err
			}
			if r.Kind() != 'n' {
				receipt = append(json.RawMessage(nil), r...)
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return 0, "", nil, err
			}
		}
	}
	return v, state, receipt, nil
}
