package natsprovider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
)

// snapshotTimeout bounds the wait for a watch's first snapshot at start.
const snapshotTimeout = 10 * time.Second

// watch starts watching the bucket and waits for its first snapshot, so that protoactor
// has a topology when StartMember returns. A start that fails waits for the loop it
// began to end, so that it leaves no goroutine behind.
func (p *Provider) watch() error {
	ctx, cancel := context.WithTimeout(p.ctx, startTimeout)
	defer cancel()
	w, err := retry(ctx, func(context.Context) (jetstream.KeyWatcher, error) { return p.kv.WatchAll(p.ctx) })
	if err != nil {
		p.cancel()
		return fmt.Errorf("natsprovider: watch members: %w", err)
	}
	f := &follower{p: p, w: w, updates: w.Updates(), ready: make(chan struct{}), deletions: make(chan deletion),
		j: newJudge(p.id, p.member != nil, p.ttl, time.Now, p.acks.record().epoch)}
	p.wg.Add(1)
	go f.run()
	select {
	case <-f.ready:
		return nil
	case <-time.After(snapshotTimeout):
		p.cancel()
		p.wg.Wait()
		return fmt.Errorf("natsprovider: the members bucket sent no snapshot in %v", snapshotTimeout)
	}
}

// follower is the watch loop: it keeps the set of members as the bucket has it, through
// its judge, and hands protoactor a topology when the set changes, not on every
// renewal. Every TTL/6 it finds the members that have been silent for a TTL while the
// bucket took this member's own renewals (see judge.dropSilent), and deletes their
// keys, stating the revision it saw, so that a renewal that came meanwhile wins; a
// member leaves the set once its key is gone.
//
// A watch can stop following while the connection goes on: its server went away and
// its consumer did not come back. The heartbeat says so first: a renewal the bucket
// acknowledged and the watch did not bring within TTL/3 means the watch is behind, and
// a new watch takes its place; its snapshot replaces the set. A watch that brings
// nothing for a whole TTL is replaced too, whatever the heartbeat says.
type follower struct {
	p       *Provider
	j       *judge
	w       jetstream.KeyWatcher
	updates <-chan jetstream.KeyValueEntry // nil once the watch closed it, until a new watch
	ready   chan struct{}                  // closed when the first snapshot is complete
	// deletions brings the outcomes of the deletions of silent members' keys.
	deletions chan deletion
}

// deletion is the outcome of deleting a silent member's key at rev: gone says the key is
// not in the bucket any more.
type deletion struct {
	key  string
	rev  uint64
	gone bool
}

// run is the loop; the provider's wait group counts it.
func (f *follower) run() {
	p := f.p
	defer p.wg.Done()
	defer func() { _ = f.w.Stop() }()
	check := time.NewTicker(p.ttl)
	defer check.Stop()
	// Judging is a look at a few times: often, so that a dead member leaves close to
	// its TTL.
	look := time.NewTicker(p.ttl / 6)
	defer look.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-check.C:
			f.act(f.j.check(p.acks.record().epoch))
		case <-look.C:
			p.pause.RLock()
			// What the watch already brought counts before anyone is judged silent.
			f.drain()
			f.act(f.j.look(p.acks.record()))
			p.pause.RUnlock()
		case d := <-f.deletions:
			p.pause.RLock()
			if d.gone {
				p.log.Info("cluster member silent for a TTL: dropped", "member", p.id, "dropped", d.key)
			}
			f.act(f.j.deleted(d.key, d.rev, d.gone))
			p.pause.RUnlock()
		case e, ok := <-f.updates:
			if !ok {
				f.updates = nil // until the check above renews the watch
				continue
			}
			p.pause.RLock()
			f.handle(e)
			p.pause.RUnlock()
		}
	}
}

// drain applies what the watch has brought and not yet been applied, without waiting.
func (f *follower) drain() {
	for f.updates != nil {
		select {
		case e, ok := <-f.updates:
			if !ok {
				f.updates = nil
				return
			}
			f.handle(e)
		default:
			return
		}
	}
}

// handle applies one entry of the watch; a nil entry ends a snapshot.
func (f *follower) handle(e jetstream.KeyValueEntry) {
	if e == nil {
		f.act(f.j.snapshotEnd())
		return
	}
	f.act(f.j.entry(f.p.entryOf(e)))
}

// entryOf is what the judge uses of an entry of the watch. A peer that speaks no version
// of the cluster protocol this member speaks is left out of it, as a key that holds no
// member is: protoactor never hears of it, and routes nothing to it.
func (p *Provider) entryOf(e jetstream.KeyValueEntry) entry {
	out := entry{key: e.Key(), deleted: e.Operation() != jetstream.KeyValuePut, rev: e.Revision(), created: e.Created()}
	if out.deleted {
		return out
	}
	var m cluster.Member
	if err := proto.Unmarshal(e.Value(), &m); err != nil || m.Id != out.key {
		p.log.Warn("ignoring a member key that does not hold its member", "key", out.key, "error", err)
		return out
	}
	speaks, err := protocolsOf(m.ProtoReflect().GetUnknown())
	if err != nil {
		p.log.Warn("ignoring a member key whose protocol versions cannot be read", "key", out.key, "error", err)
		return out
	}
	if out.key != p.id && common(p.speaks(), speaks) == 0 {
		p.refuse(out.key, m.Address(), speaks)
		return out
	}
	out.member = &m
	return out
}

// act carries out a verdict of the judge. A fence comes first: a fenced member hands
// protoactor nothing more. The first topology is handed over before the member reports
// itself started.
func (f *follower) act(v verdict) {
	p := f.p
	if v.fenced && !p.isLeaving() {
		p.fence(fmt.Errorf("%w: the watch shows its membership key %s deleted", ErrFenced, p.id))
	}
	for _, d := range v.drop {
		p.log.Info("cluster member silent for a TTL: deleting its key", "member", p.id, "silent", d.key, "last_renewal", d.last)
		p.wg.Add(1)
		go f.deleteSilent(d.key, d.rev)
	}
	if len(v.kept) > 0 {
		p.log.Info("cluster membership watch anew did not name some members; they stay, judged by their renewals", "member", p.id, "kept", v.kept)
	}
	if v.push && p.ctx.Err() == nil {
		p.push(v.members)
	}
	if v.ready {
		close(f.ready)
	}
	if v.rewatch != "" {
		f.rewatch(v.rewatch)
	}
}

// deleteSilent deletes the key of a member found silent, stating the revision seen, and
// hands the loop the outcome; the provider's wait group counts it.
func (f *follower) deleteSilent(key string, rev uint64) {
	p := f.p
	defer p.wg.Done()
	d := deletion{key: key, rev: rev, gone: p.deleteKey(key, rev)}
	select {
	case f.deletions <- d:
	case <-p.ctx.Done():
	}
}

// deleteKey deletes a member's key at rev and reports whether the key is gone. A
// deletion refused is one that found another revision: the member renewed (the key
// stays), or another member deleted the key first (gone). Rev 0 is a member kept from
// a bucket made again, whose key this member has not seen in the new one: nats.go would
// delete at revision 0 unconditionally, so nothing is deleted, and the member is gone
// only if its key is (it has not registered anew). Whether the key is there is read
// from the bucket's leader: a replica catching up after its server's death answers
// reads before it holds every key.
func (p *Provider) deleteKey(key string, rev uint64) bool {
	ctx, cancel := context.WithTimeout(p.ctx, p.ttl)
	defer cancel()
	if rev != 0 {
		err := p.kv.Delete(ctx, key, jetstream.LastRevision(rev))
		if err == nil {
			return true
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
			return false // unanswered: judged again at a later look
		}
	}
	_, deleted, err := p.keyRecord(ctx, key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true
	}
	return err == nil && deleted
}

// rewatch replaces the watch with a new one, whose snapshot rebuilds the set. When the
// new watch cannot be made, the old one stays, and the judge asks again.
func (f *follower) rewatch(why string) {
	p := f.p
	nw, err := p.kv.WatchAll(p.ctx)
	if err != nil {
		if p.ctx.Err() != nil {
			return
		}
		p.log.Warn("cluster membership watch is behind and cannot be renewed; retrying", "member", p.id, "why", why, "error", err)
		return
	}
	p.log.Info("cluster membership watch is behind; watching anew", "member", p.id, "why", why)
	_ = f.w.Stop()
	f.w, f.updates = nw, nw.Updates()
	f.j.watching()
}
