package natsprovider

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// renewalGap is the longest wait between two renewals of a member that misses none:
// one is due every TTL/3, and each may take up to TTL/3 to be taken.
func renewalGap(ttl time.Duration) time.Duration { return 2 * ttl / 3 }

// ackRun is the record of acknowledged renewals, by the heartbeat's clock: the revision
// and send time of the last one acknowledged, and since when the acknowledgements have
// come without a gap. The watch compares them with what it brings (a renewal taken but
// not brought means the watch stopped following), and silence of the others counts only
// while the run lasts.
type ackRun struct {
	mu  sync.Mutex
	rec ackRecord
}

// ackRecord is a copy of an ackRun at one moment.
type ackRecord struct {
	rev   uint64    // the revision of the last renewal acknowledged
	at    time.Time // when it was sent
	from  time.Time // since when the acknowledgements have come without a gap; zero before any
	epoch int       // how many times the bucket was made again: revisions before are void
}

// add records a renewal acknowledged at rev that was sent at sent; gap is the longest
// wait between two renewals of a run.
func (a *ackRun) add(rev uint64, sent time.Time, gap time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if rev <= a.rec.rev {
		return
	}
	if sent.Sub(a.rec.at) > gap {
		a.rec.from = sent
	}
	a.rec.rev, a.rec.at = rev, sent
}

// restart records the first renewal acknowledged by a members bucket made again: its
// revisions start over, and so does the run.
func (a *ackRun) restart(rev uint64, sent time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rec.rev, a.rec.at, a.rec.from = rev, sent, sent
	a.rec.epoch++
}

// record returns the record as it stands.
func (a *ackRun) record() ackRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rec
}

// heartbeat renews the member's key every TTL/3. Each renewal states the revision it
// last wrote, so that a key the others deleted is refused rather than written again: a
// member the others dropped must not come back under the id they blocked.
func (p *Provider) heartbeat(rev uint64, lastOK time.Time) {
	defer p.wg.Done()
	subject := p.keySubject(p.id)
	tick := time.NewTicker(p.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
		p.pause.RLock()
		rev, lastOK = p.renew(subject, rev, lastOK)
		p.pause.RUnlock()
	}
}

// renew sends one renewal and returns the revision and send time of the last one that
// was acknowledged.
//
// A member that cannot renew does not fence itself: it cannot reach the NATS that holds
// the store either, so its grains can write nothing, and when NATS answers again the
// renewal finds the key deleted (refused) if the others dropped it. Fencing on silence
// alone would stop every member at once whenever the bucket's leader moves. A member
// paused past its TTL fences the same way, on its first renewal after it resumes.
func (p *Provider) renew(subject string, rev uint64, lastOK time.Time) (uint64, time.Time) {
	if p.ctx.Err() != nil {
		return rev, lastOK
	}
	left := p.ttl - time.Since(lastOK)
	ctx, cancel := context.WithTimeout(p.ctx, p.ttl/3)
	defer cancel()
	sent := time.Now()
	ack, err := p.cfg.JetStream.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: p.member},
		jetstream.WithExpectLastSequencePerSubject(rev))
	if err == nil {
		if p.acking != nil {
			p.acking()
		}
		p.acks.add(ack.Sequence, sent, renewalGap(p.ttl))
		return ack.Sequence, sent
	}
	if p.ctx.Err() != nil {
		return rev, lastOK
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return p.refused(ctx, rev, lastOK)
	}
	// Unanswered: NATS is away, or electing, or the bucket itself is gone.
	look, cancelLook := context.WithTimeout(p.ctx, p.ttl/3)
	_, gerr := p.cfg.JetStream.KeyValue(look, p.cfg.Bucket)
	cancelLook()
	if errors.Is(gerr, jetstream.ErrBucketNotFound) {
		return p.registerAgain(rev, lastOK)
	}
	p.log.Warn("cluster membership renewal failed; retrying", "member", p.id, "error", err, "lease_left", left.Round(time.Millisecond))
	return rev, lastOK
}

// registerAgain makes the members bucket again if it is missing and registers this
// member in it anew. The bucket was lost, not just this member's key: a NATS server
// that kept it in memory was restarted, or someone deleted it. Every member lost its
// key with it, so none of them was dropped by the others, and each comes back under
// the id it had; a member the others did drop finds its key missing in the bucket it
// joined, and fences itself. The watch, silent since the bucket went, starts anew on
// the new one.
func (p *Provider) registerAgain(rev uint64, lastOK time.Time) (uint64, time.Time) {
	ctx, cancel := context.WithTimeout(p.ctx, p.ttl)
	defer cancel()
	if _, err := p.bucket(ctx); err != nil {
		p.log.Warn("cluster members bucket is gone and cannot be made again; retrying", "member", p.id, "bucket", p.cfg.Bucket, "error", err)
		return rev, lastOK
	}
	made, err := p.bucketMade(ctx)
	if err != nil {
		p.log.Warn("cluster members bucket made again, but cannot be read; retrying", "member", p.id, "error", err)
		return rev, lastOK
	}
	sent := time.Now()
	nrev, err := p.register(ctx)
	if err != nil {
		p.log.Warn("cluster members bucket made again, but this member's key could not be written; retrying", "member", p.id, "error", err)
		return rev, lastOK
	}
	p.log.Warn("cluster members bucket was lost: this member registered anew", "member", p.id, "bucket", p.cfg.Bucket)
	p.setMade(made)
	p.acks.restart(nrev, sent)
	return nrev, sent
}
