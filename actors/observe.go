package actors

import "time"

// Observer is told what the engine does, for metrics. Every field is optional; each is
// called on the goroutine that did the work, after the work, so it must return quickly
// and must not call back into the engine. The engine never waits on an observer for
// anything but the call itself.
type Observer struct {
	// Transition is called once an intent's new state is durable: open when it is
	// created, processing when its proposal is accepted, and success, failure (with
	// the failure kind) or expired when it ends.
	Transition func(to State, kind FailureKind)
	// Extraction is called after each evidence extraction with how long it took and
	// its error (nil on success).
	Extraction func(d time.Duration, err error)
	// Proving is called after each proposal is proved (extraction, evaluation and
	// receipt) with how long it took and the state it decided. Work cut short by
	// Close is not reported: it is proved again on the next start.
	Proving func(d time.Duration, state State, kind FailureKind)
}

func (o *Observer) transition(to State, kind FailureKind) {
	if o != nil && o.Transition != nil {
		o.Transition(to, kind)
	}
}

func (o *Observer) extraction(start time.Time, err error) {
	if o != nil && o.Extraction != nil {
		o.Extraction(time.Since(start), err)
	}
}

func (o *Observer) proving(start time.Time, out outcome, abandoned bool) {
	if o != nil && o.Proving != nil && !abandoned {
		o.Proving(time.Since(start), out.state, out.kind)
	}
}
