package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/proto"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/cluster/clusterpb"
)

// The transparency log of a cluster need not be kept by every member. Each member that
// keeps one builds the same tree from the same ordered events, and following the events
// and writing the log's Pebble is most of what a member that serves nobody spends
// (docs/cluster.md). A member that keeps none serves the log all the same: it reads the
// parts it is asked for from a member that keeps one, through a grain of logKind, which
// only those members serve, so that protoactor places it on one of them.

// logKind is the grain kind that members keeping the transparency log serve.
const logKind = "tlog"

// logIdentity is the one grain of logKind: every read of the log goes to it, on the
// member protoactor places it on, and it stays active for that member's life there.
const logIdentity = "log"

// logReadTimeout bounds one read on the member that keeps the log. An inclusion may
// wait for the witnesses' cosignatures (tlog's demandWait) before it answers.
const logReadTimeout = 5 * time.Second

// logGrain answers the reads of the log on a member that keeps it. Each read runs in a
// goroutine of its own, so that an inclusion waiting for witnesses holds back no tile;
// at most maxLogReads run at once, and a read past them is answered busy, so that the
// members' public /log/ traffic, which they pass on, cannot pile goroutines up here.
type logGrain struct {
	e      *Engine
	member *incarnation
	log    intentd.LogReader
	reads  chan struct{} // a slot for each read under way on this incarnation
}

// maxLogReads bounds the reads of the log a member runs at once for the others.
const maxLogReads = 64

// errLogBusy answers a read past maxLogReads.
var errLogBusy = intentd.Errorf(intentd.KindBusy, intentd.CodeCapacityExceeded,
	"the cluster member that keeps the transparency log reads as much of it for the others as it may; retry later")

// errLogLeaving answers a read that reaches a member whose engine is closing: the next
// try reaches another member that keeps the log, once this one has left.
var errLogLeaving = intentd.Errorf(intentd.KindBusy, intentd.CodeShuttingDown,
	"the cluster member that keeps the transparency log is shutting down; retry")

// Receive takes a read of the log and answers it from a goroutine of its own.
func (g *logGrain) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*clusterpb.ReadLog)
	if !ok || ctx.Sender() == nil {
		return
	}
	if !g.e.track() {
		ctx.Respond(clusterpb.NewErrorReply("", errLogLeaving))
		return
	}
	select {
	case g.reads <- struct{}{}:
	default:
		g.e.wg.Done()
		ctx.Respond(clusterpb.NewErrorReply("", errLogBusy))
		return
	}
	sender, root := ctx.Sender(), g.member.system.Root
	go func() {
		defer g.e.wg.Done()
		defer func() { <-g.reads }()
		rctx, cancel := context.WithTimeout(g.e.ctx, logReadTimeout)
		defer cancel()
		reply := g.read(rctx, m)
		if g.e.ctx.Err() != nil {
			// The engine closed under the read: an inclusion may have given up
			// waiting for the witnesses. Another member that keeps the log answers
			// in full.
			reply = clusterpb.NewErrorReply("", errLogLeaving)
		}
		root.Send(sender, reply)
	}()
}

// inclusionBody is a LogReply's body for an inclusion: the proof bundle's two members.
type inclusionBody struct {
	Log       *intentd.LogInclusion  `json:"log"`
	Witnesses *intentd.LogWitnessing `json:"log_witnesses,omitempty"`
}

// read answers one read from the log kept here.
func (g *logGrain) read(ctx context.Context, m *clusterpb.ReadLog) proto.Message {
	body, err := func() ([]byte, error) {
		switch m.GetPart() {
		case clusterpb.LogPart_LOG_PART_CHECKPOINT:
			return g.log.Checkpoint(ctx)
		case clusterpb.LogPart_LOG_PART_TILE, clusterpb.LogPart_LOG_PART_ENTRIES:
			if w := m.GetWidth(); w < 1 || w > tileWidth {
				return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, "no tile of width %d: a tile's width is 1 to %d", w, tileWidth)
			}
			if m.GetLevel() > maxTileLevel {
				return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, "no tile of level %d: a tree of 2^64 leaves has %d levels of tiles", m.GetLevel(), maxTileLevel+1)
			}
			if m.GetPart() == clusterpb.LogPart_LOG_PART_TILE {
				return g.log.Tile(ctx, m.GetLevel(), m.GetIndex(), int(m.GetWidth()))
			}
			return g.log.Entries(ctx, m.GetIndex(), int(m.GetWidth()))
		case clusterpb.LogPart_LOG_PART_INCLUSION:
			inc, wit, err := g.log.Inclusion(ctx, m.GetIntentId())
			if inc == nil {
				return nil, err
			}
			return json.Marshal(inclusionBody{Log: inc, Witnesses: wit})
		}
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, "no part %d of the log to read", m.GetPart())
	}()
	if err != nil {
		if intentd.ErrorKind(err) == intentd.KindInternal {
			g.e.log.Error("read the transparency log for another member", "part", m.GetPart().String(), "err", err)
		}
		return clusterpb.NewErrorReply("", err)
	}
	return &clusterpb.LogReply{Body: body}
}

// tileWidth is the most entries or hashes a tile holds (C2SP tlog-tiles), and
// maxTileLevel the highest level of tiles a tree of 2^64 leaves has, 8 levels of the
// tree a tile.
const (
	tileWidth    = 256
	maxTileLevel = 7
)

// ClusterLog is the cluster's transparency log, read from a member that keeps one, for
// a member that keeps none (ClusterConfig.Log nil); nil outside cluster mode. Its reads
// are answered 404 log_not_found while no member keeps a log, and 503
// member_unavailable while none that does answers.
func (e *Engine) ClusterLog() intentd.LogReader {
	if e.cfg.Cluster == nil {
		return nil
	}
	return clusterLog{e}
}

// clusterLog reads the log through the engine's membership.
type clusterLog struct{ e *Engine }

// Checkpoint reads the newest checkpoint a member that keeps the log serves.
func (l clusterLog) Checkpoint(ctx context.Context) ([]byte, error) {
	return l.read(ctx, &clusterpb.ReadLog{Part: clusterpb.LogPart_LOG_PART_CHECKPOINT})
}

// Tile reads a tile of hashes from a member that keeps the log.
func (l clusterLog) Tile(ctx context.Context, level, index uint64, width int) ([]byte, error) {
	return l.read(ctx, &clusterpb.ReadLog{Part: clusterpb.LogPart_LOG_PART_TILE, Level: level, Index: index, Width: int32(width)})
}

// Entries reads an entry bundle from a member that keeps the log.
func (l clusterLog) Entries(ctx context.Context, index uint64, width int) ([]byte, error) {
	return l.read(ctx, &clusterpb.ReadLog{Part: clusterpb.LogPart_LOG_PART_ENTRIES, Index: index, Width: int32(width)})
}

// Inclusion reads an outcome's inclusion, and what the witnesses say of its checkpoint,
// from a member that keeps the log.
func (l clusterLog) Inclusion(ctx context.Context, intentID string) (*intentd.LogInclusion, *intentd.LogWitnessing, error) {
	body, err := l.read(ctx, &clusterpb.ReadLog{Part: clusterpb.LogPart_LOG_PART_INCLUSION, IntentId: intentID})
	if err != nil || len(body) == 0 {
		return nil, nil, err
	}
	var b inclusionBody
	if err := json.Unmarshal(body, &b); err != nil || b.Log == nil {
		return nil, nil, intentd.Internal("read the log's inclusion from a member: %w", fmt.Errorf("an answer that is not an inclusion: %v", err))
	}
	return b.Log, b.Witnesses, nil
}

// logRetryPause is the pause before a read of the log is sent again.
const logRetryPause = 100 * time.Millisecond

// errNoLogKeeper answers a read of the log while no member keeps one.
var errNoLogKeeper = intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound,
	"no member of this cluster keeps a transparency log (--tlog)")

// read sends a read to the log's grain, again while no member that keeps the log
// answers within a try, until the request budget is spent or ctx ends. A try waits as
// a command's does (tryOnce): not past its time-out, the members' next change or ctx.
func (l clusterLog) read(ctx context.Context, req *clusterpb.ReadLog) ([]byte, error) {
	deadline := l.e.budgetEnd(ctx)
	try := clusterTryTimeout
	if req.GetPart() == clusterpb.LogPart_LOG_PART_INCLUSION {
		// The member that keeps the log may wait for its witnesses' cosignatures up
		// to logReadTimeout. A try that gave up sooner would be answered, on the
		// next, without them: the witnesses are asked at most once each 10 s.
		try = logReadTimeout + time.Second
	}
	var err error
	for ctx.Err() == nil {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		t := min(left, try)
		var res any
		res, err = l.e.tryOnce(ctx, t, func(m *incarnation) (any, error) { return m.readLog(req, t) })
		switch r := res.(type) {
		case *clusterpb.LogReply:
			return r.GetBody(), nil
		case *clusterpb.ErrorReply:
			if r.GetCode() != intentd.CodeShuttingDown {
				return nil, r.Err()
			}
			err = r.Err() // once that member has left, another that keeps the log answers
		}
		switch {
		case errors.Is(err, errNoLogKeeper):
			return nil, err
		case errors.Is(err, intentd.ErrEngineClosed):
			return nil, intentd.Errorf(intentd.KindBusy, intentd.CodeShuttingDown, "this member is shutting down; retry")
		case err == nil:
			err = fmt.Errorf("the log's grain answered %T", res)
		}
		select { // an answer that came at once is not tried again at once
		case <-time.After(logRetryPause):
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		return nil, intentd.Canceled(ctx.Err())
	}
	l.e.log.Warn("read the transparency log from a member that keeps it", "err", err)
	return nil, &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeMemberUnavailable,
		Message: "no cluster member that keeps the transparency log answered; retry later", Err: err}
}

// readLog sends a read to the log's grain once, through this incarnation.
func (m *incarnation) readLog(req *clusterpb.ReadLog, timeout time.Duration) (any, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.up() {
		return nil, errNotMember
	}
	if !slices.ContainsFunc(m.cluster.MemberList.Members().Members(), keepsLog) {
		return nil, errNoLogKeeper
	}
	return m.cluster.Request(logIdentity, logKind, req, cluster.WithTimeout(timeout))
}

// keepsLog reports whether a member serves the log's grain.
func keepsLog(m *cluster.Member) bool { return slices.Contains(m.Kinds, logKind) }
