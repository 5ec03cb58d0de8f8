package intentd

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"time"

	"github.com/mr-tron/base58"

	"github.com/intentd/intentd/policy"
)

// AgentSignature is an agent's signature of the request that made a proposal: an RFC
// 9421 HTTP Message Signature with Ed25519, verified where the request arrived. The
// engine checks that the intent delegates to its key, spends its nonce, and keeps it
// with the proposal, so that the receipt can bind it and a proof can show it offline.
type AgentSignature struct {
	// Key is the agent's Ed25519 public key in Base58, the signature's keyid.
	Key string
	// Tag is the signature's tag parameter ("agent-payer-auth"), "" when absent.
	Tag string
	// Nonce is the signature's nonce: spent once, service-wide, until Expires.
	Nonce   string
	Created time.Time
	Expires time.Time
	// Base is the signature base: the bytes the agent's key signed (RFC 9421, 2.5).
	Base []byte
	// Signature is the 64-byte Ed25519 signature over Base.
	Signature []byte
	// Body is the request body as sent; Base covers its sha-256 as content-digest.
	Body []byte
}

// The time rules of an agent's signature (docs/agents.md): its window, from created to
// expires, is at most AgentSignatureMaxWindow, as the agent protocols of the field
// allow; a clock AgentSignatureSkew ahead or behind the service's is tolerated on both
// ends; its nonce is spent until expires plus the skew.
const (
	AgentSignatureMaxWindow = 480 * time.Second
	AgentSignatureSkew      = 60 * time.Second
)

// Agent is the agent of a proposal as a status and an outcome event name it.
type Agent struct {
	// Key is the agent's Ed25519 public key in Base58.
	Key string `json:"key"`
	// Tag is the tag the agent's signature carried, when it carried one.
	Tag string `json:"tag,omitempty"`
}

// The errors of a proposal's agent check (docs/agents.md).
const (
	// CodeAgentSignatureRequired: the intent delegates to agents and the proposal is
	// not signed (401).
	CodeAgentSignatureRequired = "agent_signature_required"
	// CodeAgentSignatureInvalid: the proposal's signature does not verify, is outside
	// its time window, or does not cover what it must (401).
	CodeAgentSignatureInvalid = "agent_signature_invalid"
	// CodeAgentSignatureReplayed: the signature's nonce was used before (401).
	CodeAgentSignatureReplayed = "agent_signature_replayed"
	// CodeAgentNotDelegated: a valid signature by a key the intent does not delegate
	// to (403).
	CodeAgentNotDelegated = "agent_not_delegated"
)

// DecodeAgentKey reads a Base58 Ed25519 public key, as an agents parameter lists them
// and a signature's keyid names them.
func DecodeAgentKey(s string) (ed25519.PublicKey, bool) {
	b, err := base58.Decode(s)
	if err != nil || len(b) != ed25519.PublicKeySize || base58.Encode(b) != s {
		return nil, false
	}
	return ed25519.PublicKey(b), true
}

// Delegates reports whether an intent of p with attrs delegates to the agent key: the
// policy has an agents part and the parameter it names lists key. It is false for an
// intent of a policy without the part, which delegates to no agent in particular (any
// caller may propose for it): a caller tells the two apart with p.Agents.
func Delegates(p *policy.Policy, attrs policy.Attrs, key string) bool {
	param, ok := p.Agents()
	if !ok {
		return false
	}
	return slices.Contains(attrs[param].Strings(), key)
}

// NonceDigest names the nonce of an agent's key in a fixed size, whatever the two hold
// (both are the caller's to choose): the name a store keeps a spent nonce under. The
// key's length comes first, so that no key and nonce run into another pair's.
func NonceDigest(key, nonce string) [sha256.Size]byte {
	h := sha256.New()
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(key))))
	h.Write([]byte(key))
	h.Write([]byte(nonce))
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
