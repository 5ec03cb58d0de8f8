package natsprovider

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/cockroachdb/datadriven"
)

// TestJudge runs the scripts in testdata/judge: each drives one member's judge, with a
// clock of the script's, through what its watch brings and its heartbeat records, and
// prints the judge's decisions. No NATS, no waiting.
//
// Commands:
//
//	new id=ID [client] [ttl=3s] [skew=D]  a judge; skew is the server's clock less this one
//	advance D                               moves the clock on
//	put key=K rev=N [created=D] [port=P] [bad]
//	                                        an entry of the watch; created is the server's
//	                                        stamp relative to its now (0 by default); port
//	                                        changes the member's record; bad is a value that
//	                                        is not the key's member
//	delete key=K [rev=N] / purge key=K      a deletion marker
//	snapshot-end                            the nil entry that ends a watch's snapshot
//	ack rev=N [sent=D]                      the heartbeat records an acknowledged renewal
//	                                        sent D from now (0 by default)
//	remade rev=N                            the heartbeat registered anew in a bucket made
//	                                        again
//	deleted key=K rev=N gone|kept           the outcome of deleting a silent member's key:
//	                                        gone from the bucket, or kept (it renewed, or
//	                                        the deletion went unanswered)
//	tick                                    the periodic look (TTL/6)
//	check                                   the look for a quiet watch (TTL)
//	rewatch                                 a new watch began
//	state                                   what the judge holds
//
// Times print as t=D from the script's start.
func TestJudge(t *testing.T) {
	datadriven.Walk(t, "testdata/judge", func(t *testing.T, path string) {
		s := &judgeScript{}
		datadriven.RunTest(t, path, s.run)
	})
}

type judgeScript struct {
	start, clock time.Time
	skew         time.Duration
	j            *judge
	acks         ackRun
}

func (s *judgeScript) now() time.Time { return s.clock }

// at prints a time of this clock as its distance from the script's start.
func (s *judgeScript) at(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return "t=" + t.Sub(s.start).String()
}

func (s *judgeScript) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && s.j == nil {
		d.Fatalf(t, "%s before new", d.Cmd)
	}
	switch d.Cmd {
	case "new":
		s.start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		s.clock, s.skew, s.acks = s.start, 0, ackRun{}
		ttl := 3 * time.Second
		scanDuration(t, d, "ttl", &ttl)
		scanDuration(t, d, "skew", &s.skew)
		var id string
		d.ScanArgs(t, "id", &id)
		s.j = newJudge(id, !d.HasArg("client"), ttl, s.now, 0)
		return fmt.Sprintf("ttl=%v look every %v, renewal gap %v", ttl, ttl/6, renewalGap(ttl))
	case "advance":
		if len(d.CmdArgs) != 1 {
			d.Fatalf(t, "advance DURATION")
		}
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			d.Fatalf(t, "advance: %v", err)
		}
		s.clock = s.clock.Add(dur)
		return s.at(s.clock)
	case "put", "delete", "purge":
		return s.verdict(s.j.entry(s.entry(t, d)))
	case "snapshot-end":
		return s.verdict(s.j.snapshotEnd())
	case "ack", "remade":
		var rev uint64
		var sent time.Duration
		d.ScanArgs(t, "rev", &rev)
		scanDuration(t, d, "sent", &sent)
		if d.Cmd == "ack" {
			s.acks.add(rev, s.clock.Add(sent), renewalGap(s.j.ttl))
		} else {
			s.acks.restart(rev, s.clock.Add(sent))
		}
		a := s.acks.record()
		return fmt.Sprintf("acked rev=%d sent %s, run from %s, bucket made again %d times", a.rev, s.at(a.at), s.at(a.from), a.epoch)
	case "deleted":
		var key string
		var rev uint64
		d.ScanArgs(t, "key", &key)
		d.ScanArgs(t, "rev", &rev)
		if d.HasArg("gone") == d.HasArg("kept") {
			d.Fatalf(t, "deleted: say gone or kept")
		}
		return s.verdict(s.j.deleted(key, rev, d.HasArg("gone")))
	case "tick":
		return s.verdict(s.j.look(s.acks.record()))
	case "check":
		return s.verdict(s.j.check(s.acks.record().epoch))
	case "rewatch":
		s.j.watching()
		return "watching anew"
	case "state":
		return s.state()
	}
	d.Fatalf(t, "unknown command %s", d.Cmd)
	return ""
}

// entry is the watch entry a put, delete or purge describes.
func (s *judgeScript) entry(t *testing.T, d *datadriven.TestData) entry {
	var e entry
	d.ScanArgs(t, "key", &e.key)
	d.MaybeScanArgs(t, "rev", &e.rev)
	var created time.Duration
	scanDuration(t, d, "created", &created)
	e.created = s.clock.Add(s.skew + created)
	if d.Cmd != "put" {
		e.deleted = true
		return e
	}
	if d.HasArg("bad") {
		return e
	}
	port := 7000
	d.MaybeScanArgs(t, "port", &port)
	e.member = &cluster.Member{Id: e.key, Host: "127.0.0.1", Port: int32(port), Kinds: []string{"intent"}}
	return e
}

func scanDuration(t *testing.T, d *datadriven.TestData, key string, dst *time.Duration) {
	t.Helper()
	var s string
	if !d.MaybeScanArgs(t, key, &s) {
		return
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	*dst = v
}

// verdict prints a verdict in the order the watch loop carries it out.
func (s *judgeScript) verdict(v verdict) string {
	var b strings.Builder
	if v.fenced {
		b.WriteString("fenced: own key deleted\n")
	}
	for _, d := range v.drop {
		fmt.Fprintf(&b, "drop %s at rev %d (last written %s)\n", d.key, d.rev, s.at(d.last))
	}
	if v.push {
		fmt.Fprintf(&b, "push [%s]\n", strings.Join(memberIDs(v.members), " "))
	}
	if v.ready {
		b.WriteString("ready\n")
	}
	if len(v.kept) > 0 {
		fmt.Fprintf(&b, "kept, not named by the snapshot: [%s]\n", strings.Join(v.kept, " "))
	}
	if v.rewatch != "" {
		fmt.Fprintf(&b, "rewatch: %s\n", v.rewatch)
	}
	if b.Len() == 0 {
		return "nothing"
	}
	return b.String()
}

func memberIDs(ms cluster.Members) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Id
		if m.Port != 7000 {
			out[i] += ":" + strconv.Itoa(int(m.Port))
		}
	}
	return out
}

// state prints the judge's sets, the times and revisions it saw, and its offset.
func (s *judgeScript) state() string {
	j := s.j
	var b strings.Builder
	fmt.Fprintf(&b, "live [%s]\n", strings.Join(memberIDs(sortedMembers(j.live)), " "))
	if j.next != nil {
		fmt.Fprintf(&b, "next [%s]\n", strings.Join(memberIDs(sortedMembers(j.next)), " "))
	}
	keys := make([]string, 0, len(j.seen))
	for k := range j.seen {
		keys = append(keys, k)
	}
	for k := range j.revs {
		if _, ok := j.seen[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: rev %d, written %s\n", k, j.revs[k], s.at(j.seen[k]))
	}
	if j.haveOffset {
		fmt.Fprintf(&b, "offset %v\n", j.offset)
	}
	fmt.Fprintf(&b, "last entry %s", s.at(j.last))
	return b.String()
}
