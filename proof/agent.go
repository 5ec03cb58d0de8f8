package proof

import (
	"fmt"
	"strings"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/httpsig"
	"github.com/intentd/intentd/policy"
)

// AgentReport is what a verified version 3 receipt establishes about the agent that
// proposed: its key signed a request whose body is the proposal, sent to this intent's
// proposal route, and (when Delegated) the intent's author listed that key.
type AgentReport struct {
	// Key is the agent's Ed25519 public key in Base58.
	Key string `json:"key"`
	// Tag is the signature's tag, when it had one.
	Tag string `json:"tag,omitempty"`
	// Delegated is true when the intent's policy delegates to agents and the intent's
	// agents parameter lists the key: the person who signed the intent chose this
	// agent. False for an undelegated intent, which any agent may propose for.
	Delegated bool `json:"delegated"`
	// Authority is the host the agent signed the request to.
	Authority string `json:"authority"`
	// Params are the signature's parameters as signed (created, expires, nonce, ...).
	Params string `json:"params"`
}

// checkAgent checks a version 3 receipt's agent: the bundle carries the signature base
// and the body; the base hashes to the receipt's digest and the agent's signature
// verifies over it; the base covers a POST to /intents/{intent id}/proposal whose
// content-digest is the body's; the body is the proposal; and, when the intent's
// policy delegates, the intent lists the key. A bundle of an earlier receipt carries
// no agent part.
func checkAgent(w *bundleWire, p *policy.Policy, in intentd.Intent, solution string, r *crypto.Receipt, report *VerifyReport) error {
	if r.Agent == nil {
		if w.Agent != nil {
			return verifyErr(CheckBundle, "proof bundle: agent is present, but the receipt (version %d) names no agent", r.Version)
		}
		if _, delegated := p.Agents(); delegated {
			return verifyErr(CheckAgent, "the intent's policy delegates to agents, but the receipt names none")
		}
		return nil
	}
	if w.Agent == nil {
		return verifyErr(CheckBundle, "proof bundle: agent is missing: a version 3 receipt binds what its agent signed")
	}
	base := []byte(w.Agent.SignatureBase)
	if err := r.VerifyAgent(base); err != nil {
		return verifyErr(CheckAgent, "agent: %v", err)
	}
	comps, params, err := httpsig.BaseComponents(base)
	if err != nil {
		return verifyErr(CheckAgent, "agent: the signature base cannot be read: %v", err)
	}
	wantPath, what := "/intents/"+r.IntentID+"/proposal", "this intent's proposal"
	if r.Mandate != nil {
		wantPath, what = "/mandates/"+r.Mandate.ID+"/purchases", "this mandate's purchases"
	}
	switch {
	case comps["@method"] != "POST":
		return verifyErr(CheckAgent, "agent: the signature covers method %q, want POST", comps["@method"])
	case !strings.EqualFold(comps["@path"], wantPath) && !strings.HasSuffix(strings.ToLower(comps["@path"]), strings.ToLower(wantPath)):
		return verifyErr(CheckAgent, "agent: the signature covers path %q, not %s (%s)", comps["@path"], what, wantPath)
	case comps["content-digest"] == "":
		return verifyErr(CheckAgent, "agent: the signature does not cover content-digest")
	}
	if !httpsig.DigestMatches(comps["content-digest"], w.Agent.Body) {
		return verifyErr(CheckAgent, "agent: the signed content-digest is not the sha-256 of the bundle's body")
	}
	if err := checkSignedBody(w.Agent.Body, solution, r); err != nil {
		return err
	}
	a := &AgentReport{Key: r.Agent.Key, Tag: r.Agent.Tag, Authority: comps["@authority"], Params: params}
	if param, delegated := p.Agents(); delegated {
		attrs := policy.Attrs{}
		if in.Attrs != nil {
			attrs = *in.Attrs
		}
		if !intentd.Delegates(p, attrs, r.Agent.Key) {
			return verifyErr(CheckAgent, "agent: the intent's parameter %s does not list the agent %s", param, r.Agent.Key)
		}
		a.Delegated = true
	} else {
		report.Notes = append(report.Notes, fmt.Sprintf("agent %s signed the proposal; the intent delegates to no agent in particular", r.Agent.Key))
	}
	report.Agent = a
	return nil
}

// checkSignedBody checks that the body the agent signed is the proposal: {"solution"}
// sent to the intent, or the purchase {"intent_id", "solution"} of this intent sent to
// its mandate.
func checkSignedBody(raw []byte, solution string, r *crypto.Receipt) error {
	if r.Mandate == nil {
		var body struct {
			Solution string `json:"solution"`
		}
		if err := decodeStrict(raw, &body); err != nil || body.Solution != solution {
			return verifyErr(CheckAgent, "agent: the signed body is not the proposal")
		}
		return nil
	}
	var body struct {
		IntentID string `json:"intent_id"`
		Solution string `json:"solution"`
	}
	if err := decodeStrict(raw, &body); err != nil || body.Solution != solution {
		return verifyErr(CheckAgent, "agent: the signed body is not the purchase of the proposal")
	}
	if id, _ := intentd.CanonicalIntentID(body.IntentID); id != r.IntentID {
		return verifyErr(CheckAgent, "agent: the signed purchase is of intent %q, not %s", body.IntentID, r.IntentID)
	}
	return nil
}
