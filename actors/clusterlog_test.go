//go:build !race

// Built without the race detector, as cluster_test.go is: protoactor-go races with
// itself when several cluster members run in one process.

package actors

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intentd/intentd"
)

// fakeLog is an in-memory transparency log: a checkpoint, tiles and bundles by their
// path, and inclusions by intent, with the errors tlog.Log gives for what it lacks.
type fakeLog struct {
	t          *testing.T
	slow       chan struct{} // an inclusion of "slow" waits for it to close
	waiting    atomic.Int32  // the inclusions of "slow" waiting
	checkpoint []byte
	tiles      map[[3]uint64][]byte // level (or 1<<63 for a bundle), index, width
	inclusions map[string]*intentd.LogInclusion
	witnessing *intentd.LogWitnessing
}

func (f *fakeLog) Checkpoint(context.Context) ([]byte, error) { return f.checkpoint, nil }

func (f *fakeLog) Tile(_ context.Context, level, index uint64, width int) ([]byte, error) {
	if width < 1 || width > 256 || level > 7 {
		f.t.Errorf("the log was asked for tile %d/%d of width %d, which no tile has: the grain passed it on", level, index, width)
	}
	if b, ok := f.tiles[[3]uint64{level, index, uint64(width)}]; ok {
		return b, nil
	}
	return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, "tile %d/%d of width %d is not in the log", level, index, width)
}

func (f *fakeLog) Entries(_ context.Context, index uint64, width int) ([]byte, error) {
	if b, ok := f.tiles[[3]uint64{1 << 63, index, uint64(width)}]; ok {
		return b, nil
	}
	return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, "entry bundle %d is not in the log", index)
}

func (f *fakeLog) Inclusion(_ context.Context, id string) (*intentd.LogInclusion, *intentd.LogWitnessing, error) {
	if id == "slow" {
		f.waiting.Add(1)
		defer f.waiting.Add(-1)
		<-f.slow
		return nil, nil, nil
	}
	if id == "broken" {
		return nil, nil, intentd.Internal("read leaf index: %w", context.DeadlineExceeded)
	}
	inc := f.inclusions[id]
	if inc == nil {
		return nil, nil, nil
	}
	return inc, f.witnessing, nil
}

// TestClusterLogReadFromAKeeper runs three members, of which only the first keeps a
// log: the other two serve its checkpoint, tiles, bundles and inclusions exactly, and
// its refusals with their kinds. Once the keeper has left, a read finds no member that keeps a log.
func TestClusterLogReadFromAKeeper(t *testing.T) {
	log := &fakeLog{
		t:          t,
		checkpoint: []byte("example.com/log\n3\nq83o+oQ=\n\n— example.com/log abc=\n"),
		tiles: map[[3]uint64][]byte{
			{0, 0, 3}:       make([]byte, 96),
			{1 << 63, 0, 3}: []byte("\x00\x02{}\x00\x02[]\x00\x01x"),
		},
		inclusions: map[string]*intentd.LogInclusion{
			"known": {LeafIndex: 2, Entry: []byte(`{"event_id":9}`), InclusionProof: [][]byte{make([]byte, 32), {1, 2}}, Checkpoint: "cp"},
		},
		witnessing: &intentd.LogWitnessing{QuorumMet: true, Cosigners: []string{"w1"}},
	}
	n := 0
	hs := clusterOf(t, 3, func(c *Config) {
		if n == 0 {
			c.Cluster.Log = log
		}
		n++
	})
	ctx := context.Background()
	if hs[0].e.ClusterLog() == nil {
		t.Fatal("ClusterLog is nil in cluster mode")
	}
	for i, h := range hs[1:] {
		l := h.e.ClusterLog()
		if cp, err := l.Checkpoint(ctx); err != nil || string(cp) != string(log.checkpoint) {
			t.Errorf("member %d: checkpoint = %q, %v; want the keeper's", i+1, cp, err)
		}
		if tile, err := l.Tile(ctx, 0, 0, 3); err != nil || len(tile) != 96 {
			t.Errorf("member %d: tile = %d bytes, %v; want 96", i+1, len(tile), err)
		}
		if b, err := l.Entries(ctx, 0, 3); err != nil || string(b) != string(log.tiles[[3]uint64{1 << 63, 0, 3}]) {
			t.Errorf("member %d: entries = %q, %v", i+1, b, err)
		}
		inc, wit, err := l.Inclusion(ctx, "known")
		if err != nil || !reflect.DeepEqual(inc, log.inclusions["known"]) || !reflect.DeepEqual(wit, log.witnessing) {
			t.Errorf("member %d: inclusion = %+v, %+v, %v; want the keeper's", i+1, inc, wit, err)
		}
		for _, c := range []struct {
			name string
			read func() error
			kind intentd.Kind
			code string
		}{
			{"a tile the log lacks", func() error { _, err := l.Tile(ctx, 0, 1, 256); return err }, intentd.KindNotFound, intentd.CodeLogNotFound},
			{"a bundle the log lacks", func() error { _, err := l.Entries(ctx, 5, 256); return err }, intentd.KindNotFound, intentd.CodeLogNotFound},
			{"a width no tile has", func() error { _, err := l.Tile(ctx, 0, 0, 257); return err }, intentd.KindNotFound, intentd.CodeLogNotFound},
			{"a level no tree has", func() error { _, err := l.Tile(ctx, 1<<61, 0, 3); return err }, intentd.KindNotFound, intentd.CodeLogNotFound},
			{"an inclusion the keeper fails to read", func() error { _, _, err := l.Inclusion(ctx, "broken"); return err }, intentd.KindInternal, intentd.CodeInternal},
		} {
			if err := c.read(); intentd.ErrorKind(err) != c.kind || intentd.ErrorCode(err) != c.code {
				t.Errorf("member %d, %s: %v; want %s", i+1, c.name, err, c.code)
			}
		}
		if inc, wit, err := l.Inclusion(ctx, "unknown"); inc != nil || wit != nil || err != nil {
			t.Errorf("member %d: inclusion of an outcome not in the log = %+v, %+v, %v; want nothing", i+1, inc, wit, err)
		}
	}

	hs[0].close()
	deadline := time.Now().Add(15 * time.Second)
	for len(hs[1].e.ClusterMembers()) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the keeper did not leave: %v", hs[1].e.ClusterMembers())
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if _, err := hs[1].e.ClusterLog().Checkpoint(ctx); intentd.ErrorCode(err) != intentd.CodeLogNotFound {
		t.Errorf("checkpoint with no keeper = %v; want %s", err, intentd.CodeLogNotFound)
	}
	if d := time.Since(start); d > clusterTryTimeout {
		t.Errorf("a read with no keeper took %s: it should not wait for one", d)
	}
}

// TestClusterLogOutsideCluster: one node has no cluster's log to read.
func TestClusterLogOutsideCluster(t *testing.T) {
	h := newHarness(t, nil)
	if l := h.e.ClusterLog(); l != nil {
		t.Fatalf("ClusterLog of one node = %v; want nil", l)
	}
}

// TestClusterLogReadsBounded: a member that keeps the log runs at most maxLogReads reads
// for the others at once, and answers one more 503 capacity_exceeded at once rather
// than start it; once they end, it reads again.
func TestClusterLogReadsBounded(t *testing.T) {
	log := &fakeLog{t: t, slow: make(chan struct{}), checkpoint: []byte("cp\n")}
	n := 0
	hs := clusterOf(t, 2, func(c *Config) {
		if n == 0 {
			c.Cluster.Log = log
		}
		n++
	})
	l := hs[1].e.ClusterLog()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range maxLogReads {
		wg.Go(func() { l.Inclusion(ctx, "slow") })
	}
	deadline := time.Now().Add(10 * time.Second)
	for log.waiting.Load() != maxLogReads {
		if time.Now().After(deadline) {
			t.Fatalf("%d reads under way on the keeper, want %d", log.waiting.Load(), maxLogReads)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := l.Checkpoint(ctx); intentd.ErrorCode(err) != intentd.CodeCapacityExceeded || intentd.ErrorKind(err) != intentd.KindBusy {
		t.Errorf("a read past the bound = %v; want %s", err, intentd.CodeCapacityExceeded)
	}
	close(log.slow)
	wg.Wait()
	if cp, err := l.Checkpoint(ctx); err != nil || string(cp) != "cp\n" {
		t.Errorf("a read once the others ended = %q, %v; want the checkpoint", cp, err)
	}
}
