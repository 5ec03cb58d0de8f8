package natsprovider

import (
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/proto"
)

// judge keeps what one member's watch has brought of the bucket and decides what to do
// about it: which set of members to hand protoactor, who has been silent too long, when
// the watch must be replaced, whether this member was dropped. It does no I/O and reads
// time only through now, so that its rules can be tried step by step without NATS; the
// watch loop (follower) feeds it and carries out its verdicts. It is not safe for
// concurrent use: one loop owns it.
//
// A member's silence is counted from its last renewal as the bucket stamped it, so a
// new watch knows at once how long a member has been silent and does not count a TTL
// afresh: the stamps are the server's clock, turned into this one's by the offset seen
// on this member's own renewals as they arrived.
type judge struct {
	id     string // this member's key: its actor system's id
	member bool   // false for a client, which has no key of its own and judges nobody
	ttl    time.Duration
	now    func() time.Time

	live map[string]*cluster.Member // the members as the watch has them
	next map[string]*cluster.Member // the set a new watch is rebuilding, or nil
	// named holds the keys a new watch's snapshot brought, a value or a deletion marker:
	// a live member it did not name is kept (snapshotEnd).
	named map[string]bool
	// deleting holds the members found silent whose keys are being deleted, at the
	// revision seen: they stay in the set until the deletion is confirmed (deleted).
	deleting map[string]uint64
	seen     map[string]time.Time // when each key was last written, by this clock
	revs     map[string]uint64    // and its revision then
	// offset turns the server's stamps into this clock: arrival less stamp of this
	// member's last renewal that arrived while the watch was following.
	offset     time.Duration
	haveOffset bool
	initial    bool      // the first watch's snapshot is not complete yet
	last       time.Time // when the watch last brought anything, a nil entry included
	epoch      int       // how many times the bucket was made again, when it was last watched
}

// entry is what the judge uses of one entry of the watch.
type entry struct {
	key     string
	deleted bool      // a delete or purge marker: the key is gone
	rev     uint64    // the bucket's revision of the write
	created time.Time // when the bucket took the write, by the server's clock
	// member is the record written, or nil when the value is not a member whose id is
	// the key: such a write counts as a renewal of the key but names nobody.
	member *cluster.Member
}

// verdict is what the judge decided on one input. The zero verdict is "nothing to do".
type verdict struct {
	// push says the set of members changed: hand protoactor members (sorted by id).
	push    bool
	members cluster.Members
	// ready says the first snapshot is complete: the member may report itself started.
	ready bool
	// drop lists the members found silent for a TTL: their keys are to be deleted at
	// the revision seen, so that a renewal that came meanwhile wins, and the outcome
	// told to deleted. They leave the set only once their keys are gone.
	drop []dropped
	// rewatch, when not empty, says why the watch must be replaced by a new one.
	rewatch string
	// fenced says the watch shows this member's own key deleted: it was dropped.
	fenced bool
	// kept lists the live members a new watch's snapshot did not name, kept in the set
	// (snapshotEnd), sorted.
	kept []string
}

// dropped is a member found silent: its key, the revision seen, and when it was last
// written by this clock.
type dropped struct {
	key  string
	rev  uint64
	last time.Time
}

// Why the judge asks for a new watch.
const (
	whyAckNotSeen = "a renewal the bucket took did not come"
	whySilent     = "silent for a TTL"
)

// newJudge returns the judge of a watch that has just begun, its first snapshot to come.
// member is false for a client; epoch is how many times the bucket was made again so
// far (ackRecord.epoch).
func newJudge(id string, member bool, ttl time.Duration, now func() time.Time, epoch int) *judge {
	return &judge{
		id: id, member: member, ttl: ttl, now: now,
		live:     map[string]*cluster.Member{},
		seen:     map[string]time.Time{},
		revs:     map[string]uint64{},
		deleting: map[string]uint64{},
		initial:  true,
		last:     now(),
		epoch:    epoch,
	}
}

// entry applies one entry of the watch.
func (j *judge) entry(e entry) verdict {
	j.last = j.now()
	if _, ok := j.deleting[e.key]; ok && e.rev != j.revs[e.key] {
		// Renewed or deleted since it was found silent: the deletion is settled.
		delete(j.deleting, e.key)
	}
	switch {
	case e.deleted:
		delete(j.seen, e.key)
		delete(j.revs, e.key)
	case e.rev == j.revs[e.key]:
		// A new watch's snapshot brings again what the old one brought.
	case j.next != nil && j.haveOffset:
		// Written while the old watch was behind: when, the stamp says.
		at := e.created.Add(j.offset)
		if at.After(j.last) {
			at = j.last
		}
		j.seen[e.key], j.revs[e.key] = at, e.rev
	default:
		j.seen[e.key], j.revs[e.key] = j.last, e.rev
		if e.key == j.id && j.next == nil && !j.initial {
			j.offset, j.haveOffset = j.last.Sub(e.created), true
		}
	}
	var v verdict
	if j.next != nil {
		// The new watch's snapshot: the set it rebuilds replaces the live one at its end.
		j.named[e.key] = true
		_, v.fenced = j.apply(j.next, e)
		return v
	}
	changed, fenced := j.apply(j.live, e)
	v.fenced = fenced
	if changed && !j.initial {
		v.push, v.members = true, sortedMembers(j.live)
	}
	return v
}

// snapshotEnd applies the nil entry that ends a watch's snapshot of the keys that were
// there when it began.
//
// A new watch's snapshot replaces the set, but for the live members it did not name:
// those are kept. A key that went was deleted, and a deletion leaves a marker the
// snapshot brings; a key the snapshot does not name at all was read from a replica that
// does not hold it yet (the bucket is kept in memory, and a NATS server that comes back
// after its death follows it from empty). Handed to protoactor, a set without a member
// blocks that member's id on this one for good: a member that lost sight of the others
// that way stayed so through every renewal after (docs/cluster.md, "Membership"). The
// kept members are judged by their silence, as the others are. A client judges nobody,
// so it keeps nobody either: a member it kept that had died would stay in its set.
func (j *judge) snapshotEnd() verdict {
	j.last = j.now()
	switch {
	case j.next != nil:
		var v verdict
		for key, m := range j.live {
			if j.member && !j.named[key] {
				j.next[key] = m
				v.kept = append(v.kept, key)
			}
		}
		slices.Sort(v.kept)
		if !sameMembers(j.live, j.next) {
			v.push, v.members = true, sortedMembers(j.next)
		}
		j.live, j.next, j.named = j.next, nil, nil
		return v
	case j.initial:
		j.initial = false
		return verdict{push: true, members: sortedMembers(j.live), ready: true}
	}
	return verdict{}
}

// apply records one entry in set, and reports whether the set of members changed and
// whether the entry is the deletion of this member's own key.
func (j *judge) apply(set map[string]*cluster.Member, e entry) (changed, fenced bool) {
	if e.deleted {
		_, was := set[e.key]
		delete(set, e.key)
		return was, e.key == j.id && j.member
	}
	if e.member == nil {
		return false, false
	}
	if old, was := set[e.key]; was && proto.Equal(old, e.member) {
		return false, false
	}
	set[e.key] = e.member
	return true, false
}

// look is the periodic judgement, made once what the watch brought so far has been
// applied; a is the heartbeat's record of acknowledged renewals.
//
// A renewal the bucket acknowledged and the watch did not bring within TTL/3 means the
// watch stopped following: a new one is needed. A renewal the watch brought before the
// heartbeat recorded its acknowledgement begins a run of acknowledgements that is not
// known yet: judged by the run before, the others would seem silent for as long as the
// bucket took no renewals, so the next look judges. Otherwise the silent are dropped.
// Nobody is judged before the first snapshot, while a new watch rebuilds the set, or by
// a client.
func (j *judge) look(a ackRecord) verdict {
	if j.initial || j.next != nil || !j.member {
		return verdict{}
	}
	switch {
	case a.rev > j.revs[j.id] && j.now().Sub(a.at) > j.ttl/3:
		return j.rewatch(whyAckNotSeen, a.epoch)
	case a.rev < j.revs[j.id]:
		return verdict{}
	}
	return j.dropSilent(a.from)
}

// check is the look for a watch that went quiet: one that brought nothing for a whole
// TTL, not even this member's renewals, is replaced whatever the heartbeat says. epoch
// is ackRecord.epoch.
func (j *judge) check(epoch int) verdict {
	if j.initial || j.now().Sub(j.last) <= j.ttl {
		return verdict{}
	}
	return j.rewatch(whySilent, epoch)
}

// rewatch asks for a new watch, for why. A bucket made again since the last watch began
// numbers its revisions anew: those recorded of the bucket before mean nothing in it.
func (j *judge) rewatch(why string, epoch int) verdict {
	if epoch != j.epoch {
		j.epoch, j.revs, j.deleting = epoch, map[string]uint64{}, map[string]uint64{}
	}
	return verdict{rewatch: why}
}

// watching records that a new watch began: its snapshot rebuilds the set, which replaces
// the live one when the snapshot ends.
func (j *judge) watching() {
	j.next, j.named, j.last = map[string]*cluster.Member{}, map[string]bool{}, j.now()
}

// dropSilent finds the members silent for a TTL, whose keys are to be deleted. Silence
// counts only from since, since when the bucket has taken this member's own renewals
// without a gap; and nobody is judged while the watch does not bring them. In the other
// cases (the bucket is not taking renewals, the watch is not following, this member
// was paused) it does not know what the others did: while a bucket elects a new leader
// nobody can renew.
//
// A member found silent stays in the set until its key is gone (deleted): one that
// renewed meanwhile keeps its key, and protoactor, handed a set without it, would have
// blocked it here for good while it went on serving as a member for the others.
func (j *judge) dropSilent(since time.Time) verdict {
	now := j.now()
	if now.Sub(j.seen[j.id]) > renewalGap(j.ttl) || since.IsZero() {
		return verdict{}
	}
	var v verdict
	for key := range j.live {
		if _, ok := j.deleting[key]; ok || key == j.id {
			continue
		}
		at := j.seen[key]
		if since.After(at) {
			at = since
		}
		if now.Sub(at) > j.ttl {
			v.drop = append(v.drop, dropped{key: key, rev: j.revs[key], last: j.seen[key]})
		}
	}
	if len(v.drop) == 0 {
		return verdict{}
	}
	slices.SortFunc(v.drop, func(a, b dropped) int { return strings.Compare(a.key, b.key) })
	for _, d := range v.drop {
		j.deleting[d.key] = d.rev
	}
	return v
}

// deleted takes the outcome of deleting the key of a member found silent at rev: gone
// says the key is not in the bucket any more (this deletion or another member's took
// it), and the member leaves the set. Otherwise (it renewed, or the deletion went
// unanswered) it stays, and is judged again at the next look.
func (j *judge) deleted(key string, rev uint64, gone bool) verdict {
	if r, ok := j.deleting[key]; !ok || r != rev {
		return verdict{} // settled meanwhile by what the watch brought
	}
	delete(j.deleting, key)
	if !gone || j.revs[key] != rev {
		return verdict{}
	}
	if _, ok := j.live[key]; !ok {
		return verdict{}
	}
	delete(j.live, key)
	if j.next != nil {
		delete(j.next, key)
	}
	return verdict{push: true, members: sortedMembers(j.live)}
}

// sortedMembers is the set as protoactor is handed it: sorted by id, so that every
// member sees one order.
func sortedMembers(set map[string]*cluster.Member) cluster.Members {
	members := make(cluster.Members, 0, len(set))
	for _, m := range set {
		members = append(members, m)
	}
	slices.SortFunc(members, func(a, b *cluster.Member) int { return strings.Compare(a.Id, b.Id) })
	return members
}

func sameMembers(a, b map[string]*cluster.Member) bool {
	if len(a) != len(b) {
		return false
	}
	for k, m := range a {
		if o, ok := b[k]; !ok || !proto.Equal(m, o) {
			return false
		}
	}
	return true
}
