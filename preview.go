package intentd

import "fmt"

// PreviewNote is said by every preview, in its body, so that neither a person nor an
// agent mistakes it for an outcome: the decision a proposal would get, not one made.
const PreviewNote = "A preview, not a proof: nothing was stored, no event was sent and no receipt was signed. " +
	"The intent is still open and its one proposal is unspent; the outcome of a proposal of this solution " +
	"is decided on evidence extracted again then, which may differ if the solution changed meanwhile."

// Preview is what a proposal would decide, without being made (Engine.Preview): the
// would-be outcome, success or failure, with the failure's kind, the constraints that
// fail and why, and the evidence it was decided on.
type Preview struct {
	// Outcome holds the decision in the fields of an intent's terminal status: State
	// is StateSuccess or StateFailure.
	Outcome Status
	// PreviewsLeft is how many more previews the intent may have; -1 when unbounded.
	PreviewsLeft int
}

// MarshalJSON writes the outcome's fields as a terminal status has them, under
// "outcome" rather than "status", then "proof": false, the note, and previews_left
// (absent when unbounded).
func (p Preview) MarshalJSON() ([]byte, error) {
	if p.Outcome.State != StateSuccess && p.Outcome.State != StateFailure {
		return nil, fmt.Errorf("a preview decides success or failure, not %q", p.Outcome.State)
	}
	b, err := p.Outcome.marshal("outcome", string(p.Outcome.State))
	if err != nil {
		return nil, err
	}
	note, err := MarshalJSON(PreviewNote)
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"proof":false,"note":`...)
	b = append(b, note...)
	if p.PreviewsLeft >= 0 {
		b = fmt.Appendf(b, `,"previews_left":%d`, p.PreviewsLeft)
	}
	return append(b, '}'), nil
}
