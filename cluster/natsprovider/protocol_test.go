package natsprovider

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// TestProtocolsOfRecords reads the versions of records as members of each release write
// them, and of records that are not.
func TestProtocolsOfRecords(t *testing.T) {
	member := &cluster.Member{Id: "m1", Host: "127.0.0.1", Port: 7001, Kinds: []string{"intent"}}
	plain, err := proto.Marshal(member)
	if err != nil {
		t.Fatal(err)
	}
	otherField := protowire.AppendString(protowire.AppendTag(slices.Clone(plain), 999, protowire.BytesType), "x")
	tests := []struct {
		name    string
		record  []byte
		want    []uint32
		wantErr bool
	}{
		{"a release before the versions", plain, []uint32{1}, false},
		{"this release", withProtocols(plain, Protocols), Protocols, false},
		{"several versions", withProtocols(plain, []uint32{1, 2, 3}), []uint32{1, 2, 3}, false},
		{"a field of another kind beside them", withProtocols(otherField, []uint32{2}), []uint32{2}, false},
		{"version zero", withProtocols(plain, []uint32{0}), nil, true},
		{"a version cut short", append(protowire.AppendTag(slices.Clone(plain), protocolField, protowire.VarintType), 0x80), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m cluster.Member
			if err := proto.Unmarshal(tt.record, &m); err != nil {
				// A record cut short is no member at all: the watch ignores it before
				// reading versions.
				if tt.wantErr {
					return
				}
				t.Fatal(err)
			}
			if !proto.Equal(withoutUnknown(&m), member) {
				t.Errorf("the member read is %v, want %v: the versions must not change what an earlier release reads", &m, member)
			}
			got, err := protocolsOf(m.ProtoReflect().GetUnknown())
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("protocolsOf = %v, %v; want %v (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// withoutUnknown is m without the fields its type does not know.
func withoutUnknown(m *cluster.Member) *cluster.Member {
	c := proto.Clone(m).(*cluster.Member)
	c.ProtoReflect().SetUnknown(nil)
	return c
}

func TestCommon(t *testing.T) {
	tests := []struct {
		ours, theirs []uint32
		want         uint32
	}{
		{[]uint32{1}, []uint32{1}, 1},
		{[]uint32{1, 2}, []uint32{1}, 1},
		{[]uint32{1, 2}, []uint32{2, 3}, 2},
		{[]uint32{1}, []uint32{2}, 0},
		{[]uint32{1}, nil, 0},
	}
	for _, tt := range tests {
		if got := common(tt.ours, tt.theirs); got != tt.want {
			t.Errorf("common(%v, %v) = %d, want %d", tt.ours, tt.theirs, got, tt.want)
		}
	}
}

// FuzzProtocolsOf: the fields of a membership record, which any client of the bucket
// may write, never panic the reader, and what it reads are versions above zero.
func FuzzProtocolsOf(f *testing.F) {
	f.Add(withProtocols(nil, []uint32{1}))
	f.Add(withProtocols(nil, []uint32{1, 2}))
	f.Add([]byte{0xc0, 0x3e, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := protocolsOf(b)
		if err != nil {
			return
		}
		if len(got) == 0 || slices.Contains(got, 0) {
			t.Fatalf("protocolsOf(%x) = %v", b, got)
		}
	})
}

// TestPeerOfAnotherProtocolRefused: members that speak a common version see each
// other, whatever else they speak; a member of a release before the versions (a record
// without them) is seen as speaking version 1; a member that speaks only a version the
// others do not is refused by each of them, logged and counted once, and refuses them.
func TestPeerOfAnotherProtocolRefused(t *testing.T) {
	js := embed(t)
	var mu sync.Mutex
	refused := map[string][]string{} // refuser -> refused
	speaking := func(vs ...uint32) func(*Provider) {
		return func(p *Provider) {
			p.cfg.Protocols = vs
			p.cfg.OnRefused = func(member string, _ []uint32) {
				mu.Lock()
				defer mu.Unlock()
				refused[p.ID()] = append(refused[p.ID()], member)
			}
		}
	}
	a := startPeerWith(t, js, 1, speaking(1))
	b := startPeerWith(t, js, 1, speaking(1, 2))
	waitPeers(t, 3*time.Second, peerIDs(a, b), a, b)
	c := startPeerWith(t, js, 1, speaking(2))
	waitPeers(t, 3*time.Second, peerIDs(b, c), c)
	// A record as the release before the versions writes it: no versions.
	legacy := &cluster.Member{Id: "legacy", Host: "127.0.0.1", Port: 7999, Kinds: []string{"intent"}}
	value, err := proto.Marshal(legacy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.prov.kv.Put(context.Background(), legacy.Id, value); err != nil {
		t.Fatal(err)
	}
	sorted := func(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }
	waitPeers(t, 3*time.Second, sorted(a.prov.ID(), b.prov.ID(), "legacy"), a)
	waitPeers(t, 3*time.Second, sorted(a.prov.ID(), b.prov.ID(), c.prov.ID(), "legacy"), b)
	waitPeers(t, 3*time.Second, []string{b.prov.ID(), c.prov.ID()}, c)
	// Renewals bring the refused records again: each is still counted once.
	time.Sleep(2 * *testTTL)
	mu.Lock()
	defer mu.Unlock()
	want := map[string][]string{a.prov.ID(): {c.prov.ID()}}
	cr := sorted(refused[c.prov.ID()]...)
	if got := refused[a.prov.ID()]; !slices.Equal(got, want[a.prov.ID()]) {
		t.Errorf("a (version 1) refused %v, want %v", got, want[a.prov.ID()])
	}
	if got := refused[b.prov.ID()]; len(got) != 0 {
		t.Errorf("b (versions 1 and 2) refused %v, want none", got)
	}
	if wantC := sorted(a.prov.ID(), "legacy"); !slices.Equal(cr, wantC) {
		t.Errorf("c (version 2) refused %v, want %v", cr, wantC)
	}
}
