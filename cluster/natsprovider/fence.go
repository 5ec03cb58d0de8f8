package natsprovider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd/internal/jsread"
)

// refused handles a renewal the bucket refused because the key is not at the revision
// last written: either a renewal was written but its acknowledgement lost (the key is
// ours, at a later revision), or another member dropped this one and deleted the key,
// or the bucket this member joined was lost and made again. It returns the revision and
// send time of the last renewal acknowledged, as renew does.
//
// The key is read from the bucket's leader (keyRecord): a replica catching up after its
// server's death could answer that the key is missing, and fence a healthy member.
func (p *Provider) refused(ctx context.Context, rev uint64, lastOK time.Time) (uint64, time.Time) {
	m, deleted, err := p.keyRecord(ctx, p.id)
	switch {
	case err == nil && deleted:
		p.fence(fmt.Errorf("%w: its membership key %s was deleted", ErrFenced, p.id))
	case err == nil && string(m.Data) == string(p.member):
		return m.Sequence, lastOK
	case err == nil:
		p.fence(fmt.Errorf("%w: its membership key %s holds another member's record", ErrFenced, p.id))
	case errors.Is(err, jetstream.ErrMsgNotFound):
		// Gone, or never in this bucket: one made again after the one this member
		// joined was lost, by another member that found it gone first.
		made, merr := p.bucketMade(ctx)
		switch {
		case merr != nil:
			p.log.Warn("cluster membership key missing and the bucket cannot be read; retrying", "member", p.id, "error", merr)
		case !made.Equal(p.madeAt()):
			return p.registerAgain(rev, lastOK)
		default:
			p.fence(fmt.Errorf("%w: its membership key %s is missing from the bucket it joined", ErrFenced, p.id))
		}
	default:
		p.log.Warn("cluster membership renewal refused and the key could not be read; retrying", "member", p.id, "error", err)
	}
	return rev, lastOK
}

// Fenced is closed when the member has been fenced: from then on it must not serve
// grains; the node shuts its cluster member down and starts a new one, which joins
// under a new id. FenceCause says why.
func (p *Provider) Fenced() <-chan struct{} { return p.fenced }

// FenceCause is why the member was fenced, or nil while it is not.
func (p *Provider) FenceCause() error {
	select {
	case <-p.fenced:
		return p.fenceCause
	default:
		return nil
	}
}

// fence stops renewing and watching, once, and reports it. It is called only from the
// provider's own goroutines, which Shutdown waits for, so the goroutine it starts for
// Config.OnFenced is counted before Shutdown can be waiting.
func (p *Provider) fence(reason error) {
	p.fenceOnce.Do(func() {
		p.fenceCause = reason
		p.log.Error("cluster member fenced: it must stop serving grains and rejoin", "member", p.id, "reason", reason)
		p.cancel()
		close(p.fenced)
		if p.cfg.OnFenced != nil {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.cfg.OnFenced(reason)
			}()
		}
	})
}

// isLeaving says whether Shutdown has begun: the deletion of the key it makes is no
// fence.
func (p *Provider) isLeaving() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leaving
}

// keyRecord reads the last record of a member's key from the bucket's leader: the
// record, and whether it is a deletion's marker; jetstream.ErrMsgNotFound when the key
// never was in the bucket.
func (p *Provider) keyRecord(ctx context.Context, key string) (*jetstream.RawStreamMsg, bool, error) {
	m, err := jsread.Last(ctx, p.cfg.JetStream.Conn(), "KV_"+p.cfg.Bucket, p.keySubject(key))
	if err != nil {
		return nil, false, err
	}
	op := m.Header.Get("KV-Operation")
	return m, op == "DEL" || op == "PURGE", nil
}

// keySubject is the subject a member's key is written on in the bucket's stream.
func (p *Provider) keySubject(key string) string { return "$KV." + p.cfg.Bucket + "." + key }
