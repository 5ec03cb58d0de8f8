package actors

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/httpsig"
	"github.com/intentd/intentd/proof"
	"github.com/intentd/intentd/storetest"
)

// TestAgentRecordOfEarlierReleases reads an agent's signature as the releases before
// this one wrote it, with its nonce and times, and checks that this one writes neither,
// and no signature once the proposal is decided.
func TestAgentRecordOfEarlierReleases(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	by := &intentd.AgentSignature{Key: "6YqbznDofanj9iShu3oWBb9PUQk9qPhKAenguN2j2xYr", Tag: "agent-payer-auth",
		Nonce: "n-1", Created: at, Expires: at.Add(4 * time.Minute),
		Base: []byte("\"@method\": POST\n"), Signature: bytes.Repeat([]byte{7}, 64), Body: []byte(`{"solution":"M"}`)}

	// The earlier writer: every field, in field order.
	var m []byte
	m = appendPresent(m, agentKey, by.Key)
	m = appendBytes(m, agentTag, by.Tag)
	m = appendBytes(m, agentNonce, by.Nonce)
	for _, f := range []struct {
		num protowire.Number
		at  time.Time
	}{{agentCreated, by.Created}, {agentExpires, by.Expires}} {
		m = protowire.AppendTag(m, f.num, protowire.VarintType)
		m = protowire.AppendVarint(m, protowire.EncodeZigZag(f.at.UnixNano()))
	}
	m = appendBytes(m, agentBase, by.Base)
	m = appendBytes(m, agentSignature, by.Signature)
	m = appendBytes(m, agentBody, by.Body)
	back, err := decodeAgent(m)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, by) {
		t.Fatalf("the earlier record reads as %+v, want %+v", back, by)
	}

	for _, tc := range []struct {
		name    string
		decided bool
		want    intentd.AgentSignature
	}{
		{"proposed", false, intentd.AgentSignature{Key: by.Key, Tag: by.Tag, Base: by.Base, Signature: by.Signature, Body: by.Body}},
		{"decided", true, intentd.AgentSignature{Key: by.Key, Tag: by.Tag, Base: by.Base, Body: by.Body}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			field := appendAgent(nil, by, tc.decided)
			num, typ, n := protowire.ConsumeTag(field)
			if num != fieldAgent || typ != protowire.BytesType {
				t.Fatalf("field %d of type %d, want %d of bytes", num, typ, fieldAgent)
			}
			v, n2 := protowire.ConsumeBytes(field[n:])
			if n2 != len(field)-n {
				t.Fatalf("the field's length says %d bytes, it holds %d", n2, len(field)-n)
			}
			got, err := decodeAgent(v)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("written and read back as %+v, want %+v", *got, tc.want)
			}
			if len(v) >= len(m) {
				t.Fatalf("the record takes %d bytes, the earlier one %d", len(v), len(m))
			}
		})
	}
}

// TestSignedProposalAcrossRestart stops the engine while a proposal an agent signed is
// being proved, and checks that, opened again on the same store, it decides the
// proposal from what the processing snapshot kept: the status names the agent, the
// version 3 receipt binds the key and the base the agent signed, and the proof, with
// the base and the body the decided snapshot kept, verifies offline.
func TestSignedProposalAcrossRestart(t *testing.T) { eachStore(t, testSignedProposalAcrossRestart) }

func testSignedProposalAcrossRestart(t *testing.T, backend storetest.Backend) {
	h := newHarnessOn(t, backend, withProver)
	id := h.submit("M", 2500)
	by := signedBy(t, id, "block:M-cheap")
	if err := h.e.Propose(context.Background(), id, intentd.Proposal{Solution: "block:M-cheap"}, by); err != nil {
		t.Fatal(err)
	}
	<-h.ext.started
	h.close()
	h.ext.release = make(chan struct{})
	close(h.ext.release)
	h.open()
	st := h.waitState(id, intentd.StateSuccess)
	if st.Agent == nil || st.Agent.Key != by.Key || st.Agent.Tag != by.Tag {
		t.Fatalf("the status names the agent %+v, want %s with its tag", st.Agent, by.Key)
	}
	b, err := h.e.Proof(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Receipt.Receipt; r.Version != crypto.ReceiptVersionAgent || r.VerifyAgent(by.Base) != nil {
		t.Fatalf("receipt version %d, agent %+v: want version 3 binding the signed base", r.Version, r.Agent)
	}
	if b.Agent == nil || b.Agent.SignatureBase != string(by.Base) || !bytes.Equal(b.Agent.Body, by.Body) {
		t.Fatalf("the bundle carries %+v, want the base and body the agent signed", b.Agent)
	}
	rep, err := proof.Verify(h.bundleJSON(id), testServiceKey.PublicKey())
	if err != nil {
		t.Fatalf("the proof does not verify: %v", err)
	}
	if rep.Agent == nil || rep.Agent.Key != by.Key {
		t.Fatalf("the proof's report names the agent %+v, want %s", rep.Agent, by.Key)
	}
	h.restart()
	if again := h.bundleJSON(id); !bytes.Contains(again, []byte(`"signature_base"`)) {
		t.Fatalf("after a second restart the bundle has no signature base: %s", again)
	}
}

// signedBy is an agent's signature of the proposal of solution for intent id, as the
// HTTP layer hands it to the engine.
func signedBy(t *testing.T, id, solution string) *intentd.AgentSignature {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := intentd.MarshalJSON(intentd.Proposal{Solution: solution})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "http://intentd.example/intents/"+id+"/proposal", bytes.NewReader(body))
	now := time.Now()
	if err := httpsig.Sign(r, body, key, httpsig.Params{Created: now, Expires: now.Add(4 * time.Minute), Tag: "agent-payer-auth"}); err != nil {
		t.Fatal(err)
	}
	v, err := httpsig.Verify(r, body, now, httpsig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &intentd.AgentSignature{Key: v.KeyID, Tag: v.Tag, Nonce: v.Nonce, Created: v.Created, Expires: v.Expires,
		Base: v.Base, Signature: v.Signature, Body: body}
}
