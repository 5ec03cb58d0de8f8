package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intentd/intentd"
)

// flushEvery spaces the writes of an endpoint's record while its deliveries move: an
// event delivered and not yet written is delivered again after a crash, with the same
// webhook-id, which a receiver de-duplicates on.
const flushEvery = 200 * time.Millisecond

// Why a deliverer's following ends, besides its context and the stream's errors.
var (
	// errRestart: an admin changed where the endpoint stands; follow from the record.
	errRestart = errors.New("the endpoint's record changed")
	// errStop: the endpoint is deleted or disabled, or this member lost its lease.
	errStop = errors.New("the endpoint is no longer delivered here")
)

// deliverer delivers one endpoint while this member holds its lease.
type deliverer struct {
	s      *Service
	id     string
	cancel context.CancelFunc
	done   chan struct{}
	// changed is signalled when an admin on this member changed the endpoint's record,
	// so that a disable, enable or redeliver takes effect at once rather than at the
	// next write, which an idle endpoint makes only to renew its lease.
	changed chan struct{}

	// The record as last written or read, its revision, and whether what is here
	// (the cursor, the attempts) is newer than what the store has.
	mu    sync.Mutex
	rec   record
	rev   uint64
	dirty bool
	// lastWrite is when the record was last written, which renewed the lease.
	lastWrite time.Time
	// seen is the newest event id the stream gave; headAt the time of the oldest
	// event not yet delivered (zero when none waits): the endpoint's lag.
	seen   uint64
	headAt time.Time
	// busy counts the current follow's deliveries under way: an attempt being made, or
	// made and taken but not yet passed by the position.
	busy *atomic.Int64
}

// start runs a deliverer for r, whose lease this member just took at revision rev.
func (s *Service) start(ctx context.Context, r record, rev uint64) {
	ctx, cancel := context.WithCancel(ctx)
	d := &deliverer{s: s, id: r.ID, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{}, 1),
		rec: r, rev: rev, lastWrite: time.Now()}
	s.mu.Lock()
	s.running[r.ID] = d
	s.mu.Unlock()
	s.log.Info("webhooks: delivering an endpoint", "webhook", r.ID, "after_event", r.Delivered)
	go func() {
		defer close(d.done)
		defer func() {
			s.mu.Lock()
			delete(s.running, r.ID)
			s.mu.Unlock()
		}()
		d.run(ctx)
	}()
}

// run follows the endpoint's events until it stops being delivered here.
func (d *deliverer) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := d.follow(ctx)
		switch {
		case errors.Is(err, errRestart), errors.Is(err, intentd.ErrSubscriberTooSlow):
			continue
		case errors.Is(err, errStop):
			return
		case ctx.Err() != nil:
			d.release()
			return
		}
		d.s.log.Warn("webhooks: the event stream ended; following it again", "webhook", d.id, "err", err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
}

// flight is one event being delivered.
type flight struct {
	ev   intentd.Event
	skip bool // selected by no filter: passed over in order
	done chan struct{}
	// Set before done is closed.
	ok        bool
	exhausted bool
	// busy counts this flight in its follow's deliveries under way from its
	// attempt's start until the follow moves past it, or the attempt fails.
	busy *atomic.Int64

	mu      sync.Mutex
	attempt int        // attempts made
	since   *time.Time // first failure
	next    *time.Time // next attempt
}

// follow delivers the events after the record's cursor until an error, a change of
// the record, or a stop.
func (d *deliverer) follow(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.mu.Lock()
	r := d.rec
	d.mu.Unlock()
	if r.Status == intentd.WebhookDisabled {
		d.release()
		return errStop
	}
	sub, err := d.s.opts.Source.Subscribe(ctx, r.Delivered, intentd.Filter{Types: r.Types})
	if err != nil {
		return err
	}
	defer sub.Close()
	if sub.Truncated() {
		d.mu.Lock()
		d.rec.Skipped++
		d.dirty = true
		d.mu.Unlock()
		d.s.log.Warn("webhooks: events this endpoint had not been delivered are no longer in the event log; it resumes at the oldest one kept",
			"webhook", d.id, "after_event", r.Delivered)
	}
	events := make(chan intentd.Event)
	ended := make(chan error, 1)
	go func() {
		for {
			ev, err := sub.Next(ctx)
			if err != nil {
				ended <- err
				return
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				ended <- ctx.Err()
				return
			}
		}
	}()
	sg, err := d.s.signer(r)
	if err != nil {
		return err
	}
	failed := make(chan struct{}, 1)
	busy := new(atomic.Int64)
	d.mu.Lock()
	d.busy = busy
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.busy = nil
		d.mu.Unlock()
	}()
	// The first event is the one the record's attempt and failure belong to.
	resume := r.WebhookState
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	var q []*flight
	limit := max(r.MaxInFlight, 1)
	for {
		var in chan intentd.Event
		if len(q) < limit {
			in = events
		}
		var head chan struct{}
		if len(q) > 0 {
			head = q[0].done
		}
		select {
		case ev := <-in:
			f := &flight{ev: ev, done: make(chan struct{}), busy: busy}
			d.mu.Lock()
			d.seen = max(d.seen, ev.ID)
			d.mu.Unlock()
			if !d.match(ctx, r, ev) {
				f.skip, f.ok = true, true
				close(f.done)
			} else {
				if resume.Attempt > 0 {
					f.attempt, f.since, f.next = resume.Attempt, resume.FailingSince, resume.NextAttempt
					resume = intentd.WebhookState{}
				}
				go d.deliver(ctx, sg, r.URL, f, failed)
			}
			q = append(q, f)
		case <-head:
			for len(q) > 0 && isClosed(q[0].done) {
				f := q[0]
				if f.exhausted {
					return d.disable(ctx, f)
				}
				q = q[1:]
				if f.ok && !f.skip {
					f.busy.Add(-1)
				}
				d.mu.Lock()
				d.rec.Delivered = f.ev.ID
				d.dirty = true
				d.mu.Unlock()
			}
			d.noteFailing(q)
		case <-failed:
			d.noteFailing(q)
		case err := <-ended:
			return err
		case <-d.changed:
			d.mu.Lock()
			mine := d.rec
			d.mu.Unlock()
			if err := d.reread(ctx, mine); err != nil {
				return err
			}
		case <-tick.C:
			d.setHead(q)
			if err := d.flush(ctx, false); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// match reports whether the endpoint's filters select ev; its types were the
// subscription's filter already.
func (d *deliverer) match(ctx context.Context, r record, ev intentd.Event) bool {
	if len(r.MandateIDs) > 0 {
		var m struct {
			MandateID string `json:"mandate_id"`
		}
		if json.Unmarshal(ev.Data, &m) != nil || !slices.Contains(r.MandateIDs, m.MandateID) {
			return false
		}
	}
	if len(r.PolicyIDs) > 0 {
		policy := d.policyOf(ctx, ev.IntentID)
		if !slices.Contains(r.PolicyIDs, policy) {
			return false
		}
	}
	return true
}

// policyOf is the policy an intent names, read until it can be: an event whose policy
// cannot be read now is neither delivered nor passed over by guess.
func (d *deliverer) policyOf(ctx context.Context, intentID string) string {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		raw, err := d.s.opts.Source.GetIntent(ctx, intentID)
		if err == nil {
			var in struct {
				Intent struct {
					PolicyID string `json:"policy_id"`
				} `json:"intent"`
			}
			_ = json.Unmarshal(raw, &in)
			return in.Intent.PolicyID
		}
		if errors.Is(err, intentd.ErrNotFound) || intentd.ErrorKind(err) == intentd.KindNotFound {
			return ""
		}
		d.s.log.Warn("webhooks: read an event's intent for the endpoint's policy filter", "webhook", d.id, "intent_id", intentID, "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ""
		}
	}
}

// deliver sends f's event until the receiver takes it or the schedule ends.
func (d *deliverer) deliver(ctx context.Context, sg signer, url string, f *flight, failed chan<- struct{}) {
	defer close(f.done)
	schedule := d.s.opts.Schedule
	for {
		f.mu.Lock()
		n, next := f.attempt, f.next
		f.mu.Unlock()
		if n >= len(schedule) {
			f.exhausted = true
			return
		}
		if next != nil {
			if wait := time.Until(*next); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return
				}
			}
		}
		f.busy.Add(1)
		a := d.s.send(ctx, url, sg, f.ev)
		if ctx.Err() != nil {
			f.busy.Add(-1)
			return // stopped in its middle: the attempt is made again wherever the endpoint goes
		}
		d.s.metrics.attempt(d.id, a)
		d.mu.Lock()
		d.rec.addAttempt(a)
		d.dirty = true
		d.mu.Unlock()
		f.mu.Lock()
		f.attempt++
		if a.Error == "" {
			f.ok = true // still counted busy until the follow moves past it
			f.mu.Unlock()
			return
		}
		f.busy.Add(-1)
		if f.since == nil {
			at := a.At
			f.since = &at
		}
		if f.attempt < len(schedule) {
			at := time.Now().Add(jitter(schedule[f.attempt]))
			f.next = &at
		}
		f.mu.Unlock()
		select {
		case failed <- struct{}{}:
		default:
		}
	}
}

// send makes one attempt of ev.
func (s *Service) send(ctx context.Context, url string, sg signer, ev intentd.Event) intentd.WebhookAttempt {
	start := time.Now()
	a := intentd.WebhookAttempt{EventID: ev.ID, At: start.UTC()}
	msgID := strconv.FormatUint(ev.ID, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(ev.Data))
	if err != nil {
		a.Error = err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "intentd-webhooks/1")
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(start.Unix(), 10))
	req.Header.Set("webhook-signature", sg.signature(msgID, start.Unix(), ev.Data))
	resp, err := s.client.Do(req)
	a.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		a.Error = attemptError(err)
		return a
	}
	// Read a little of the answer so that the connection is kept for the next one.
	_, _ = io.CopyN(io.Discard, resp.Body, 4096)
	resp.Body.Close()
	a.Status = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		a.Error = fmt.Sprintf("the receiver answered %d", resp.StatusCode)
	}
	return a
}

// attemptError says why an attempt got no answer, without the URL, which the
// endpoint shows already.
func attemptError(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within the time limit"
	}
	return err.Error()
}

// noteFailing sets the record's status from the oldest event being retried.
func (d *deliverer) noteFailing(q []*flight) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range q {
		f.mu.Lock()
		since, attempt, next := f.since, f.attempt, f.next
		f.mu.Unlock()
		if since != nil && !f.ok {
			if d.rec.Status != intentd.WebhookFailing || d.rec.Attempt != attempt {
				d.dirty = true
			}
			d.rec.Status, d.rec.FailingSince, d.rec.Attempt, d.rec.NextAttempt = intentd.WebhookFailing, since, attempt, next
			return
		}
	}
	if d.rec.Status == intentd.WebhookFailing {
		d.rec.Status, d.rec.FailingSince, d.rec.Attempt, d.rec.NextAttempt = intentd.WebhookActive, nil, 0, nil
		d.dirty = true
	}
}

// setHead notes the time of the oldest event not yet delivered, for the lag.
func (d *deliverer) setHead(q []*flight) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.headAt = time.Time{}
	if len(q) > 0 {
		d.headAt = q[0].ev.At
	}
}

// disable stops the endpoint after f's event failed its whole schedule; the cursor
// stays before it, so that an admin's enable resumes there.
func (d *deliverer) disable(ctx context.Context, f *flight) error {
	d.mu.Lock()
	d.rec.Status = intentd.WebhookDisabled
	d.rec.DisabledReason = fmt.Sprintf("event %d failed every attempt of the retry schedule", f.ev.ID)
	d.rec.FailingSince, d.rec.Attempt, d.rec.NextAttempt = nil, 0, nil
	d.rec.Lease = nil
	d.dirty = true
	d.mu.Unlock()
	d.s.log.Error("webhooks: endpoint disabled: an event failed every attempt", "webhook", d.id, "event_id", f.ev.ID)
	if err := d.flush(ctx, true); err != nil {
		return err
	}
	return errStop
}

// notify tells the deliverer its record was changed by an admin.
func (d *deliverer) notify() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// release gives the lease up as the member stops, so that another takes the endpoint
// at once rather than when the lease ends.
func (d *deliverer) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	d.mu.Lock()
	d.rec.Lease = nil
	d.dirty = true
	d.mu.Unlock()
	_ = d.flush(ctx, true)
}

// flush writes the record when it changed, or when the lease is due for renewal,
// renewing the lease. A write refused as stale reads the record again: deleted, or
// its lease taken, the deliverer stops; changed by an admin, it starts over from it.
func (d *deliverer) flush(ctx context.Context, final bool) error {
	d.mu.Lock()
	ttl := d.s.opts.LeaseTTL
	due := time.Since(d.lastWrite) >= ttl/3
	if !d.dirty && !due {
		d.mu.Unlock()
		return nil
	}
	if !final && time.Since(d.lastWrite) >= ttl-ttl/5 {
		// The lease is nearly out and not renewed: another member may take the
		// endpoint once it ends, so this one stops first.
		d.mu.Unlock()
		d.s.log.Warn("webhooks: the endpoint's lease could not be renewed; stopping its deliveries here", "webhook", d.id)
		return errStop
	}
	r := d.rec
	if !final {
		r.Lease = &lease{Owner: d.s.opts.Member, Until: time.Now().Add(ttl)}
	}
	rev := d.rev
	d.mu.Unlock()
	next, err := d.s.opts.Store.UpdateWebhook(ctx, d.id, r.encode(), rev)
	if errors.Is(err, intentd.ErrStale) {
		return d.reread(ctx, r)
	}
	if err != nil {
		d.s.log.Warn("webhooks: write the endpoint's record", "webhook", d.id, "err", err)
		return nil // tried again at the next tick, until the lease runs out
	}
	d.mu.Lock()
	d.rev, d.lastWrite = next, time.Now()
	d.rec.Lease = r.Lease
	if d.rec.Delivered == r.Delivered && len(d.rec.Attempts) == len(r.Attempts) {
		d.dirty = false
	}
	d.mu.Unlock()
	return nil
}

// reread handles a write refused as stale.
func (d *deliverer) reread(ctx context.Context, mine record) error {
	b, rev, err := d.s.opts.Store.Webhook(ctx, d.id)
	if errors.Is(err, intentd.ErrNotFound) {
		d.s.log.Info("webhooks: endpoint deleted; its deliveries stop", "webhook", d.id)
		return errStop
	}
	if err != nil {
		return nil // tried again at the next tick
	}
	r, err := decodeRecord(d.id, b)
	if err != nil {
		return err
	}
	if r.heldByOther(d.s.opts.Member, time.Now()) && !d.s.opts.Exclusive {
		d.s.log.Warn("webhooks: another member took the endpoint's lease; its deliveries stop here", "webhook", d.id, "member", r.Lease.Owner)
		return errStop
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rev = rev
	if r.Epoch != mine.Epoch {
		// An admin's change: its status and schedule stand; the position this
		// deliverer reached and has not written stands too, unless the change, or one
		// since this deliverer last read the record, moved it back on purpose.
		if r.RedeliverEpoch <= mine.Epoch && mine.Delivered > r.Delivered {
			r.Delivered, r.Attempts, r.Skipped = mine.Delivered, mine.Attempts, mine.Skipped
		}
		d.rec = r
		d.dirty = true // the next write renews the lease on the new state
		return errRestart
	}
	return nil // written again, with this revision, at the next tick
}
