package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/intentd/intentd"
)

// Preview decides what a proposal of p would decide for the open intent id, on the
// caller's goroutine and within the previews' share of the proving limiter, and changes
// nothing: the intent is read, never written, its actor is not asked (a preview must
// not wait behind, nor delay, the intent's own transitions), and no receipt is made.
// An open intent past its deadline is answered as expired without being expired here:
// the expiry scheduler writes that, with its event, as it would have anyway.
func (e *Engine) Preview(ctx context.Context, rawID string, p intentd.Proposal) (intentd.Preview, error) {
	id, ok := intentd.CanonicalIntentID(rawID)
	if !ok {
		return intentd.Preview{}, intentd.Errorf(intentd.KindInvalid, intentd.CodeInvalidID, "intent id %q is not a UUID", rawID)
	}
	if err := e.checkSolution(p); err != nil {
		return intentd.Preview{}, err
	}
	snap, err := e.loadSnapshot(ctx, id)
	if err != nil {
		return intentd.Preview{}, err
	}
	switch {
	case snap.State == intentd.StateExpired || snap.State == intentd.StateOpen && !e.cfg.Now().Before(snap.ExpiresAt):
		return intentd.Preview{}, intentd.Errorf(intentd.KindConflict, intentd.CodeIntentExpired, "intent %s has expired", id)
	case snap.State != intentd.StateOpen:
		return intentd.Preview{}, intentd.Errorf(intentd.KindConflict, intentd.CodeProposalExists,
			"intent %s already has a proposal: a preview is only of use before it", id)
	}
	left, ok := e.takePreview(id)
	if !ok {
		return intentd.Preview{}, intentd.Errorf(intentd.KindTooMany, intentd.CodePreviewLimit,
			"intent %s has had its %d previews; its one proposal can still be made", id, e.cfg.MaxPreviewsPerIntent)
	}
	if !e.reservePreview(ctx) {
		e.givePreviewBack(id)
		return intentd.Preview{}, intentd.Errorf(intentd.KindBusy, intentd.CodeCapacityExceeded, "proving capacity for previews is full; retry later")
	}
	defer e.limiter.previewDone()

	pctx, cancel := context.WithTimeout(ctx, e.cfg.ProvingTimeout)
	defer cancel()
	o, err := e.previewOutcome(ctx, pctx, snap, p)
	if err != nil {
		return intentd.Preview{}, err
	}
	return intentd.Preview{
		Outcome: intentd.Status{
			State: o.state, IntentID: id, Proposal: &p, Evidence: o.evidence, Reason: o.reason,
			FailureKind: o.kind, Failures: o.failures, EvidenceMissing: o.missing,
		},
		PreviewsLeft: left,
	}, nil
}

// previewOutcome runs decide for a preview. A panic is an internal error of this one
// request, and a caller that gives up (or an engine that closes) gets no outcome rather
// than a failure that is not the solution's.
// ctx bounds the work (the caller's, within the proving time-out), caller is the
// caller's own: a time-out of the work is the solution's failure, as for a proposal.
func (e *Engine) previewOutcome(caller, ctx context.Context, snap *snapshot, p intentd.Proposal) (o outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = intentd.Internal("preview: %w", fmt.Errorf("panic: %v", r))
		}
	}()
	o, abandoned := e.decide(ctx, snap, p, func() bool { return e.closed() || caller.Err() != nil }, false)
	switch {
	case abandoned && e.closed():
		return outcome{}, intentd.Errorf(intentd.KindBusy, intentd.CodeShuttingDown, "the service is shutting down")
	case abandoned:
		return outcome{}, intentd.Canceled(caller.Err())
	}
	return o, nil
}

// Deadline returns when intent id expires if it has no proposal by then, for agents
// deciding how long they may search (the MCP tool get_intent).
func (e *Engine) Deadline(ctx context.Context, id string) (time.Time, error) {
	snap, err := e.loadSnapshot(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	return snap.ExpiresAt, nil
}

// reservePreview asks the limiter for a preview's place.
func (e *Engine) reservePreview(ctx context.Context) bool {
	return ctx.Err() == nil && !e.closed() && e.limiter.reservePreview()
}

// takePreview counts one more preview of intent id and reports how many are left after
// it, or false when none was left (the count is then unchanged). With no bound, left is
// -1.
func (e *Engine) takePreview(id string) (left int, ok bool) {
	limit := e.cfg.MaxPreviewsPerIntent
	if limit == 0 {
		return -1, true
	}
	e.previewMu.Lock()
	defer e.previewMu.Unlock()
	n := e.previewed[id]
	if n >= limit {
		return 0, false
	}
	e.previewed[id] = n + 1
	return limit - n - 1, true
}

// givePreviewBack uncounts a preview that was refused for capacity: the caller was told
// to retry, and the retry should not cost it a second preview.
func (e *Engine) givePreviewBack(id string) {
	if e.cfg.MaxPreviewsPerIntent == 0 {
		return
	}
	e.previewMu.Lock()
	if n := e.previewed[id]; n > 1 {
		e.previewed[id] = n - 1
	} else {
		delete(e.previewed, id)
	}
	e.previewMu.Unlock()
}

// forgetPreviews drops the count of an intent that ended: it can have no more
// previews, and the table holds only the intents that still may.
func (e *Engine) forgetPreviews(id string) {
	e.previewMu.Lock()
	delete(e.previewed, id)
	e.previewMu.Unlock()
}
