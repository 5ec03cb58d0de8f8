package natsprovider

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// The cluster protocol is what members send each other: the messages of
// cluster/clusterpb, over protoactor's remoting, and the meaning of each. Its versions:
//
//  1. The messages of clusterpb as the first clustered release sent them, and as this
//     one sends them.
//
// A member says which versions it speaks in its membership record, beside the
// cluster.Member the record holds, as a field protoactor's Member does not have
// (protocolField): a member of a release before the versions ignores a field it does not
// know, and one whose record has none speaks version 1. A member hands protoactor only
// the peers that speak a version it speaks, so that no grain is placed on a peer that
// would misread its commands; a peer refused so is logged once and counted
// (Config.OnRefused). During a rolling upgrade a release speaks the versions of the
// release before it as well as its own, so that members of both serve together.

// Protocols are the versions of the cluster protocol this build speaks.
var Protocols = []uint32{1}

// protocolField is the field number of the versions in a membership record: far past
// the four fields of cluster.Member, so that a later field of protoactor's does not
// take it. Each version is one varint of the field (not packed), so that the record of
// a member of several versions is still a valid cluster.Member.
const protocolField protowire.Number = 1000

// legacyProtocols are the versions of a member whose record names none: one of a
// release before the versions, which spoke version 1.
var legacyProtocols = []uint32{1}

// withProtocols is the record value with the versions speaks appended as fields.
func withProtocols(value []byte, speaks []uint32) []byte {
	out := slices.Clone(value)
	for _, v := range speaks {
		out = protowire.AppendTag(out, protocolField, protowire.VarintType)
		out = protowire.AppendVarint(out, uint64(v))
	}
	return out
}

// protocolsOf reads the versions a member's record names from the fields its
// cluster.Member did not know (unknown, as protobuf keeps them): legacyProtocols when
// it names none.
func protocolsOf(unknown []byte) ([]uint32, error) {
	var speaks []uint32
	for len(unknown) > 0 {
		num, typ, n := protowire.ConsumeTag(unknown)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		unknown = unknown[n:]
		if num == protocolField && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(unknown)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			if v == 0 || v > 1<<31 {
				return nil, fmt.Errorf("protocol version %d", v)
			}
			speaks = append(speaks, uint32(v))
			unknown = unknown[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, unknown)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		unknown = unknown[n:]
	}
	if len(speaks) == 0 {
		return legacyProtocols, nil
	}
	return speaks, nil
}

// common is the highest version both ours and theirs name, or 0 when none.
func common(ours, theirs []uint32) uint32 {
	var best uint32
	for _, v := range theirs {
		if v > best && slices.Contains(ours, v) {
			best = v
		}
	}
	return best
}

// ErrProtocol is the cause of a refused peer: it speaks no version of the cluster
// protocol this member speaks.
var ErrProtocol = errors.New("natsprovider: the peer speaks no version of the cluster protocol this member speaks")

// refuse logs and counts a peer refused for its protocol versions, once for each member
// id: its record is read again at every renewal.
func (p *Provider) refuse(id, address string, speaks []uint32) {
	p.mu.Lock()
	if p.outcasts == nil {
		p.outcasts = make(map[string]bool)
	}
	seen := p.outcasts[id]
	p.outcasts[id] = true
	p.mu.Unlock()
	if seen {
		return
	}
	p.log.Error("cluster member refused: it speaks no version of the cluster protocol this member speaks; no intent is routed to it",
		"member", p.id, "refused", id, "address", address, "it_speaks", speaks, "this_member_speaks", p.speaks())
	if p.cfg.OnRefused != nil {
		p.cfg.OnRefused(id, speaks)
	}
}

// speaks are the versions this member speaks: Config.Protocols, or Protocols.
func (p *Provider) speaks() []uint32 {
	if len(p.cfg.Protocols) > 0 {
		return p.cfg.Protocols
	}
	return Protocols
}
