package clusterpb

import (
	"time"

	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/policy"
)

// Command is what every command to an intent grain has: the id of the intent it is for,
// which the grain checks against its own identity, the request id it deduplicates
// retries on, and the sender's trace context, which the owner's spans continue.
type Command interface {
	proto.Message
	GetRequestId() string
	GetIntentId() string
	GetTraceContext() string
}

// The commands; a new one that lacks a request id does not compile.
var (
	_ Command = (*CreateIntent)(nil)
	_ Command = (*Propose)(nil)
	_ Command = (*Expire)(nil)
	_ Command = (*Resume)(nil)
	_ Command = (*Proved)(nil)
	_ Command = (*GetStatus)(nil)
)

// SetTraceContext sets a command's trace_context: the W3C traceparent of the sender's
// span, which the owner's spans continue.
func SetTraceContext(cmd Command, traceparent string) {
	switch c := cmd.(type) {
	case *CreateIntent:
		c.TraceContext = traceparent
	case *Propose:
		c.TraceContext = traceparent
	case *Expire:
		c.TraceContext = traceparent
	case *Resume:
		c.TraceContext = traceparent
	case *Proved:
		c.TraceContext = traceparent
	case *GetStatus:
		c.TraceContext = traceparent
	}
}

// NewErrorReply is the reply that carries err across a node. An *intentd.Error keeps its
// kind, code and message; an internal error, or an error of another type, crosses as the
// service's "internal error" and nothing more, because its cause may name what a client
// must not see: the grain's node logs it.
func NewErrorReply(requestID string, err error) *ErrorReply {
	var e *intentd.Error
	if !errors.As(err, &e) || e.Kind == intentd.KindInternal {
		return &ErrorReply{RequestId: requestID, Kind: ErrorKind_ERROR_KIND_INTERNAL, Code: intentd.CodeInternal, Message: "internal error"}
	}
	return &ErrorReply{RequestId: requestID, Kind: ErrorKind(e.Kind), Code: e.Code, Message: e.Message}
}

// Err is the *intentd.Error the reply carries, for the node that asked. The cause of an
// internal error says that it happened on another node, so that its log line is not
// mistaken for one of its own.
func (x *ErrorReply) Err() *intentd.Error {
	if x.GetKind() == ErrorKind_ERROR_KIND_INTERNAL {
		return intentd.Internal("cluster grain: %w", errors.New("the grain's node failed; its log has the cause"))
	}
	return &intentd.Error{Kind: intentd.Kind(x.GetKind()), Code: x.GetCode(), Message: x.GetMessage()}
}

var stateNames = map[State]intentd.State{
	State_STATE_OPEN:       intentd.StateOpen,
	State_STATE_PROCESSING: intentd.StateProcessing,
	State_STATE_SUCCESS:    intentd.StateSuccess,
	State_STATE_FAILURE:    intentd.StateFailure,
	State_STATE_EXPIRED:    intentd.StateExpired,
}

var failureKinds = map[FailureKind]intentd.FailureKind{
	FailureKind_FAILURE_KIND_NONE:        "",
	FailureKind_FAILURE_KIND_CONSTRAINTS: intentd.FailureConstraints,
	FailureKind_FAILURE_KIND_EVIDENCE:    intentd.FailureEvidence,
	FailureKind_FAILURE_KIND_EXTRACTION:  intentd.FailureExtraction,
	FailureKind_FAILURE_KIND_PROOF:       intentd.FailureProof,
}

// FromState is the wire form of s; an unknown state is an error rather than a zero that
// the other node would refuse later, further from the cause.
func FromState(s intentd.State) (State, error) {
	for k, v := range stateNames {
		if v == s {
			return k, nil
		}
	}
	return State_STATE_UNSPECIFIED, fmt.Errorf("clusterpb: unknown state %q", s)
}

// Domain is the intentd.State of s: an error for a state the wire does not name.
func (s State) Domain() (intentd.State, error) {
	if v, ok := stateNames[s]; ok {
		return v, nil
	}
	return "", fmt.Errorf("clusterpb: no intent state %d", s)
}

// FromFailureKind is the wire form of k ("" is none).
func FromFailureKind(k intentd.FailureKind) (FailureKind, error) {
	for w, v := range failureKinds {
		if v == k {
			return w, nil
		}
	}
	return FailureKind_FAILURE_KIND_NONE, fmt.Errorf("clusterpb: unknown failure kind %q", k)
}

// Domain is the intentd.FailureKind of k.
func (k FailureKind) Domain() (intentd.FailureKind, error) {
	if v, ok := failureKinds[k]; ok {
		return v, nil
	}
	return "", fmt.Errorf("clusterpb: no failure kind %d", k)
}

// FromFailures is the wire form of a policy's failures, their missing evidence with them.
func FromFailures(fs []policy.Failure) []*ConstraintFailure {
	if fs == nil {
		return nil
	}
	out := make([]*ConstraintFailure, len(fs))
	for i, f := range fs {
		out[i] = &ConstraintFailure{Index: int32(f.Index), PrettyExpr: f.PrettyExpr, Reason: f.Reason, MissingEvidence: f.MissingEvidence}
	}
	return out
}

// DomainFailures is the []policy.Failure of the wire's failures.
func DomainFailures(fs []*ConstraintFailure) []policy.Failure {
	if fs == nil {
		return nil
	}
	out := make([]policy.Failure, len(fs))
	for i, f := range fs {
		out[i] = policy.Failure{Index: int(f.GetIndex()), PrettyExpr: f.GetPrettyExpr(), Reason: f.GetReason(), MissingEvidence: f.GetMissingEvidence()}
	}
	return out
}

// FromStatus is the wire form of an intent's status.
func FromStatus(s intentd.Status) (*Status, error) {
	state, err := FromState(s.State)
	if err != nil {
		return nil, err
	}
	kind, err := FromFailureKind(s.FailureKind)
	if err != nil {
		return nil, err
	}
	out := &Status{
		State:           state,
		IntentId:        s.IntentID,
		Evidence:        s.Evidence,
		Reason:          s.Reason,
		FailureKind:     kind,
		Failures:        FromFailures(s.Failures),
		EvidenceMissing: s.EvidenceMissing,
	}
	if s.Proposal != nil {
		out.Proposal = &Proposal{Solution: s.Proposal.Solution}
	}
	if s.Agent != nil {
		out.Agent = &Agent{Key: s.Agent.Key, Tag: s.Agent.Tag}
	}
	return out, nil
}

// Domain is the intentd.Status the wire form carries.
func (x *Status) Domain() (intentd.Status, error) {
	state, err := x.GetState().Domain()
	if err != nil {
		return intentd.Status{}, err
	}
	kind, err := x.GetFailureKind().Domain()
	if err != nil {
		return intentd.Status{}, err
	}
	out := intentd.Status{
		State:           state,
		IntentID:        x.GetIntentId(),
		Evidence:        x.GetEvidence(),
		Reason:          x.GetReason(),
		FailureKind:     kind,
		Failures:        DomainFailures(x.GetFailures()),
		EvidenceMissing: x.GetEvidenceMissing(),
	}
	if p := x.GetProposal(); p != nil {
		out.Proposal = &intentd.Proposal{Solution: p.GetSolution()}
	}
	if a := x.GetAgent(); a != nil {
		out.Agent = &intentd.Agent{Key: a.GetKey(), Tag: a.GetTag()}
	}
	return out, nil
}

// FromAgentSignature is the wire form of an agent's signature, nil for none.
func FromAgentSignature(by *intentd.AgentSignature) *AgentSignature {
	if by == nil {
		return nil
	}
	return &AgentSignature{Key: by.Key, Tag: by.Tag, Nonce: by.Nonce,
		CreatedUnixNano: by.Created.UnixNano(), ExpiresUnixNano: by.Expires.UnixNano(),
		Base: by.Base, Signature: by.Signature, Body: by.Body}
}

// Domain is the intentd.AgentSignature the wire form carries, nil for none.
func (x *AgentSignature) Domain() *intentd.AgentSignature {
	if x == nil {
		return nil
	}
	return &intentd.AgentSignature{Key: x.GetKey(), Tag: x.GetTag(), Nonce: x.GetNonce(),
		Created: time.Unix(0, x.GetCreatedUnixNano()).UTC(), Expires: time.Unix(0, x.GetExpiresUnixNano()).UTC(),
		Base: x.GetBase(), Signature: x.GetSignature(), Body: x.GetBody()}
}
