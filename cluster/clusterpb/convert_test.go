package clusterpb

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/policy"
)

// TestErrorKindsMirrorTheDomain holds the wire's ErrorKind to intentd.Kind number for
// number: a kind added on one side only would cross a node as another status.
func TestErrorKindsMirrorTheDomain(t *testing.T) {
	for k := intentd.Kind(0); ; k++ {
		name := k.String()
		wire, known := ErrorKind_name[int32(k)]
		if strings.HasPrefix(name, "kind(") {
			if known {
				t.Errorf("the wire names kind %d (%s), which intentd does not have", k, wire)
			}
			break
		}
		if want := "ERROR_KIND_" + strings.ToUpper(name); wire != want {
			t.Errorf("kind %d is %s in intentd and %q on the wire, want %s", k, name, wire, want)
		}
	}
	if got, want := len(ErrorKind_name), int(intentd.KindTooMany)+1; got != want {
		t.Errorf("the wire has %d error kinds, intentd %d", got, want)
	}
}

func TestErrorReplyRoundTrip(t *testing.T) {
	for k := intentd.KindInvalid; k <= intentd.KindTooMany; k++ {
		in := intentd.Errorf(k, "some_code", "message of kind %s", k)
		got := roundTrip(t, NewErrorReply("r1", in)).Err()
		if got.Kind != in.Kind || got.Code != in.Code || got.Message != in.Message {
			t.Errorf("kind %s: got %+v, want %+v", k, got, in)
		}
	}
}

// TestInternalErrorHidesItsCause: the cause of an internal error may name what a client
// must not see, and a reply may be shown by the node that asked.
func TestInternalErrorHidesItsCause(t *testing.T) {
	for _, err := range []error{
		intentd.Internal("read snapshot: %w", errors.New("secret path /var/lib/x")),
		errors.New("secret path /var/lib/x"),
	} {
		r := roundTrip(t, NewErrorReply("r2", err))
		if strings.Contains(r.String(), "secret") {
			t.Errorf("the reply carries the cause: %v", r)
		}
		got := r.Err()
		if got.Kind != intentd.KindInternal || got.Code != intentd.CodeInternal || got.Message != "internal error" {
			t.Errorf("got %+v", got)
		}
		if r.GetRequestId() != "r2" {
			t.Errorf("request id %q", r.GetRequestId())
		}
	}
}

func TestStatusRoundTrip(t *testing.T) {
	statuses := []intentd.Status{
		{State: intentd.StateOpen, IntentID: "i1"},
		{State: intentd.StateProcessing, IntentID: "i2", Proposal: &intentd.Proposal{Solution: "https://example.com/a"}},
		{State: intentd.StateSuccess, IntentID: "i3", Proposal: &intentd.Proposal{Solution: "s"}, Evidence: json.RawMessage(`{"price":3}`)},
		{
			State: intentd.StateFailure, IntentID: "i4", Proposal: &intentd.Proposal{Solution: "s"},
			Evidence: json.RawMessage(`{}`), Reason: "the evidence lacks what the policy reads (price)",
			FailureKind:     intentd.FailureEvidence,
			Failures:        []policy.Failure{{Index: 2, PrettyExpr: "price < 5", Reason: "absent", MissingEvidence: []string{"price"}}},
			EvidenceMissing: []string{"price"},
		},
		{State: intentd.StateFailure, IntentID: "i5", FailureKind: intentd.FailureExtraction, Reason: "timeout"},
		{State: intentd.StateExpired, IntentID: "i6"},
	}
	for _, s := range statuses {
		w, err := FromStatus(s)
		if err != nil {
			t.Fatalf("%s: %v", s.IntentID, err)
		}
		got, err := roundTrip(t, &StatusReply{RequestId: "r", Status: w}).GetStatus().Domain()
		if err != nil {
			t.Fatalf("%s: %v", s.IntentID, err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("%s: got %+v, want %+v", s.IntentID, got, s)
		}
	}
}

func TestUnknownStatesAreRefused(t *testing.T) {
	if _, err := FromStatus(intentd.Status{State: "paused"}); err == nil {
		t.Error("an unknown state crossed")
	}
	if _, err := FromStatus(intentd.Status{State: intentd.StateFailure, FailureKind: "mystery"}); err == nil {
		t.Error("an unknown failure kind crossed")
	}
	if _, err := (&Status{}).Domain(); err == nil {
		t.Error("a status without a state was read")
	}
	if _, err := (&Status{State: State_STATE_OPEN, FailureKind: 99}).Domain(); err == nil {
		t.Error("an unknown failure kind was read")
	}
}

// TestCommandsCarryTheirIDs: a command keeps its request id and intent id through the
// wire, since retries are deduplicated on them.
func TestCommandsCarryTheirIDs(t *testing.T) {
	cmds := []Command{
		&CreateIntent{RequestId: "a", IntentId: "x", PolicyId: "p", Snapshot: []byte(`{"v":1}`), ExpiresAtUnixNano: 42},
		&Propose{RequestId: "b", IntentId: "x", Solution: "s"},
		&Expire{RequestId: "c", IntentId: "x"},
		&Resume{RequestId: "d", IntentId: "x"},
		&Proved{RequestId: "e", IntentId: "x", Outcome: &Outcome{State: State_STATE_SUCCESS, Receipt: []byte(`{}`)}},
		&GetStatus{RequestId: "f", IntentId: "x"},
	}
	for _, c := range cmds {
		got := roundTrip(t, c)
		if !proto.Equal(got, c) || got.GetRequestId() != c.GetRequestId() || got.GetIntentId() != "x" {
			t.Errorf("%T: got %v, want %v", c, got, c)
		}
	}
}

func roundTrip[M proto.Message](t *testing.T, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSetTraceContext sets the trace context of each command, which crosses the wire
// with it; a command sent without one has none.
func TestSetTraceContext(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, cmd := range []Command{&CreateIntent{}, &Propose{}, &Expire{}, &Resume{}, &Proved{}, &GetStatus{}} {
		t.Run(string(cmd.ProtoReflect().Descriptor().Name()), func(t *testing.T) {
			if cmd.GetTraceContext() != "" {
				t.Fatalf("a new command has trace context %q", cmd.GetTraceContext())
			}
			SetTraceContext(cmd, tp)
			data, err := proto.Marshal(cmd)
			if err != nil {
				t.Fatal(err)
			}
			got := cmd.ProtoReflect().New().Interface().(Command)
			if err := proto.Unmarshal(data, got); err != nil {
				t.Fatal(err)
			}
			if got.GetTraceContext() != tp {
				t.Fatalf("trace context after the wire = %q, want %q", got.GetTraceContext(), tp)
			}
		})
	}
}
