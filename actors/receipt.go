package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	var s struct {
		V       int             `json:"v"`
		State   intentd.State   `json:"state"`
		Receipt json.RawMessage `json:"receipt"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, intentd.Internal("decode snapshot: %w", err)
	}
	if s.V != snapshotVersion {
		return nil, intentd.Internal("decode snapshot: %w", fmt.Errorf("%s has version %d, want %d", id, s.V, snapshotVersion))
	}
	if !s.State.Terminal() {
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeProofNotReady, "intent %s is %s", id, s.State)
	}
	return s.Receipt, nil
}
