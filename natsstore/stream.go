package natsstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// awaitStream looks the stream up, waiting while JetStream cannot answer yet: servers
// started together take a few seconds to elect the leader of their cluster, and a node
// started beside them should wait for it rather than fail.
func (s *Store) awaitStream(ctx context.Context) (jetstream.Stream, error) {
	start := time.Now()
	stream, err := retryTries(ctx, func(try context.Context) (jetstream.Stream, error) {
		stream, err := s.js.Stream(try, s.name)
		if err != nil && (unreachable(err) || jetStreamNotReady(err)) && time.Since(start) > 2*time.Second {
			s.log.Info("waiting for JetStream to answer", "error", err)
		}
		return stream, err
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("nats store: JetStream did not answer in %v (a cluster still electing its leader, or JetStream not enabled): %w",
			time.Since(start).Round(time.Second), err)
	}
	return stream, err
}

// errStreamNotYet is a stream not found just after it was found or made: in a cluster,
// the server asked may not have taken the stream's assignment yet, and asks again.
var errStreamNotYet = errors.New("the stream is not yet known to the server asked")

// notYet makes a stream not found errStreamNotYet, for the calls that follow the
// stream's creation.
func notYet[T any](v T, err error) (T, error) {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return v, fmt.Errorf("%w: %w", errStreamNotYet, err)
	}
	return v, err
}

// streamConfig is the one stream's layout. Rollups keep one snapshot per intent; atomic
// publish makes a terminal snapshot and its event one write.
func (s *Store) streamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:               s.name,
		Description:        "intentd: intent snapshots, policies and the event log",
		Subjects:           s.streamSubjects(),
		Storage:            jetstream.FileStorage,
		Retention:          jetstream.LimitsPolicy,
		Replicas:           replicas,
		AllowAtomicPublish: true,
		AllowRollup:        true,
		// Spent nonces of agent signatures go by themselves once their window passed
		// (nonce.go).
		AllowMsgTTL: true,
		// Direct gets are answered by any replica, a follower that has not applied the
		// latest writes included, so the store reads through the leader (leaderget.go)
		// but for one read: that of an intent by a node about to write its proposal
		// against it (IntentNearby), which a write refused as stale sends to the leader.
		// A stream made by an earlier release is left as found. The release before this
		// one read through nats.go, which takes direct gets once a stream allows them,
		// and turned them off when it opened the stream; IntentNearby then reads
		// through the leader.
		AllowDirect:       true,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxAge:            0,
		MaxMsgsPerSubject: -1,
		Discard:           jetstream.DiscardNew,
	}
}

// layoutDiff names what differs between a stream found and the layout the store needs,
// or is empty. Replicas are not compared: an operator may change them. Nor are direct
// gets: the store reads through the leader whether the stream allows them or not.
func layoutDiff(got, want jetstream.StreamConfig) string {
	var d []string
	if strings.Join(got.Subjects, ",") != strings.Join(want.Subjects, ",") {
		d = append(d, fmt.Sprintf("subjects %v, want %v", got.Subjects, want.Subjects))
	}
	if got.Storage != want.Storage {
		d = append(d, fmt.Sprintf("storage %v, want %v", got.Storage, want.Storage))
	}
	if got.Retention != want.Retention {
		d = append(d, fmt.Sprintf("retention %v, want %v", got.Retention, want.Retention))
	}
	for _, f := range []struct {
		name      string
		got, want bool
	}{
		{"allow_atomic", got.AllowAtomicPublish, want.AllowAtomicPublish},
		{"allow_rollup_hdrs", got.AllowRollup, want.AllowRollup},
		{"allow_msg_ttl", got.AllowMsgTTL, want.AllowMsgTTL},
		{"deny_purge", got.DenyPurge, false},
		{"deny_delete", got.DenyDelete, false},
	} {
		if f.got != f.want {
			d = append(d, fmt.Sprintf("%s %v, want %v", f.name, f.got, f.want))
		}
	}
	if got.MaxMsgs > 0 || got.MaxBytes > 0 || got.MaxAge > 0 || got.MaxMsgsPerSubject > 0 {
		d = append(d, "limits that drop records (max_msgs, max_bytes, max_age or max_msgs_per_subject)")
	}
	return strings.Join(d, "; ")
}

func (s *Store) last(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	m, err := s.getLastMsg(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, intentd.ErrNotFound
	}
	return m, err
}

// retryTries calls fn with a short time-out of its own until it succeeds, fails for a
// reason other than an unanswered request, or ctx ends. A stream whose leader is being
// elected (a NATS server just died) leaves a request unanswered, and one try that waited
// for ctx would leave no time for the next, answered one.
func retryTries[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, err := fn(try)
		cancel()
		if err == nil || ctx.Err() != nil || !unreachable(err) && !jetStreamNotReady(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
