package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/policy"
)

// maxNonceBytes bounds a signature's nonce: it is stored until the signature expires,
// and a nonce of 32 random bytes in Base64 is 43.
const maxNonceBytes = 128

// spendNonce spends the nonce of an agent's signature for the whole service, until the
// signature expires and the clock skew allowed on it has passed: a replay within that
// time is refused, and after it the signature's own expiry refuses it.
func (e *Engine) spendNonce(ctx context.Context, by *intentd.AgentSignature) error {
	if by.Nonce == "" || len(by.Nonce) > maxNonceBytes {
		return intentd.Errorf(intentd.KindUnauthorized, intentd.CodeAgentSignatureInvalid,
			"the signature's nonce must be 1 to %d bytes, it is %d", maxNonceBytes, len(by.Nonce))
	}
	err := e.store.SpendNonce(ctx, by.Key, by.Nonce, by.Expires.Add(intentd.AgentSignatureSkew))
	switch {
	case errors.Is(err, intentd.ErrNonceSpent):
		return intentd.Errorf(intentd.KindUnauthorized, intentd.CodeAgentSignatureReplayed,
			"the signature's nonce %q was used before: sign each request with a new nonce", by.Nonce)
	case err != nil:
		return storeFailed("spend nonce: %w", err)
	}
	return nil
}

// checkAgent decides whether the agent that signed a proposal, if any, may make it for
// the intent: an intent whose policy delegates to agents takes a proposal signed by one
// of the keys its agents parameter lists, and no other; an undelegated intent takes any.
//
// It returns the intent's attrs when it decoded them, for the proving that follows,
// which would decode them again.
func (a *intentActor) checkAgent(by *intentd.AgentSignature) (*policy.Attrs, error) {
	p, err := a.e.Policy(a.e.ctx, a.snap.PolicyID)
	if err != nil {
		return nil, err
	}
	param, delegated := p.Agents()
	if !delegated {
		return nil, nil
	}
	if by == nil {
		return nil, intentd.Errorf(intentd.KindUnauthorized, intentd.CodeAgentSignatureRequired,
			"intent %s delegates to the agents its parameter %s lists: sign the proposal with an agent's key (RFC 9421; docs/agents.md)", a.id, param)
	}
	attrs, ok := snapAttrs(a.snap)
	if !ok {
		return nil, intentd.Internal("check agent: %w", fmt.Errorf("the stored intent %s cannot be read", a.id))
	}
	if intentd.Delegates(p, attrs, by.Key) {
		return &attrs, nil
	}
	return nil, intentd.Errorf(intentd.KindForbidden, intentd.CodeAgentNotDelegated,
		"intent %s does not delegate to agent %s: its parameter %s does not list the key", a.id, by.Key, param)
}

// The fields of an agent's signature in a snapshot (field fieldAgent). The nonce and
// the two times are no longer written: they served the checks made before the
// proposal was taken, and the base's @signature-params line holds them, as signed.
// They are still read from snapshots that have them.
const (
	agentKey       protowire.Number = 1 // bytes
	agentTag       protowire.Number = 2 // bytes
	agentNonce     protowire.Number = 3 // bytes; read, no longer written
	agentCreated   protowire.Number = 4 // varint: Unix nanoseconds, zigzag; read, no longer written
	agentExpires   protowire.Number = 5 // varint; read, no longer written
	agentBase      protowire.Number = 6 // bytes
	agentSignature protowire.Number = 7 // bytes; in the snapshot of an undecided proposal only
	agentBody      protowire.Number = 8 // bytes
)

// appendAgent writes an agent's signature as the field fieldAgent, or nothing for nil:
// what the intent needs of it from then on. A proposal being proved needs the key, the
// tag, the base and the signature, which its receipt binds, and a decided one the key
// and tag its status names and the base and body its proof carries; the signature is
// then in the receipt. Each byte left out is a byte the store does not copy into its
// log, its memtable and its tables on each of the proposal's two writes
// (docs/benchmarks.md, "Signed proposals"). A release before this one reads what is
// left as a signature without nonce or times, which it never reads after the
// proposal's checks, and a decided one without its signature, which it reads only to
// prove an undecided one.
func appendAgent(b []byte, by *intentd.AgentSignature, decided bool) []byte {
	if by == nil {
		return b
	}
	sig := by.Signature
	if decided {
		sig = nil
	}
	n := protowire.SizeTag(agentKey) + protowire.SizeBytes(len(by.Key)) +
		sizeBytes(agentTag, len(by.Tag)) + sizeBytes(agentBase, len(by.Base)) +
		sizeBytes(agentSignature, len(sig)) + sizeBytes(agentBody, len(by.Body))
	b = protowire.AppendTag(b, fieldAgent, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = appendPresent(b, agentKey, by.Key)
	b = appendBytes(b, agentTag, by.Tag)
	b = appendBytes(b, agentBase, by.Base)
	b = appendBytes(b, agentSignature, sig)
	return appendBytes(b, agentBody, by.Body)
}

// sizeBytes is the size appendBytes writes for a value of n bytes: nothing when empty.
func sizeBytes(num protowire.Number, n int) int {
	if n == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

// decodeAgent reads what appendAgent wrote.
func decodeAgent(data []byte) (*intentd.AgentSignature, error) {
	by := &intentd.AgentSignature{}
	var seen uint32
	for len(data) > 0 {
		f, rest, err := nextField(data, agentKey, agentBody, &seen, func(num protowire.Number) bool {
			return num == agentCreated || num == agentExpires
		}, nil)
		if err != nil {
			return nil, err
		}
		data = rest
		num, v, u := f.num, f.v, f.u
		switch num {
		case agentKey:
			by.Key = string(v)
		case agentTag:
			by.Tag = string(v)
		case agentNonce:
			by.Nonce = string(v)
		case agentCreated:
			by.Created = wireTime(u)
		case agentExpires:
			by.Expires = wireTime(u)
		case agentBase:
			by.Base = bytes.Clone(v)
		case agentSignature:
			by.Signature = bytes.Clone(v)
		case agentBody:
			by.Body = bytes.Clone(v)
		}
	}
	if seen&(1<<agentKey) == 0 {
		return nil, errors.New("no key")
	}
	return by, nil
}
