package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
)

// The engine's mandates (intentd.MandateEngine): a mandate is a record in the store,
// changed only by its actor (mandate_actor.go); each purchase is an intent of the
// mandate's policy and attrs whose snapshot names the mandate, and whose proving asks
// the mandate's actor for the decision.

var _ intentd.MandateEngine = (*Engine)(nil)

// errNoMandates answers every mandate call of an engine whose store keeps none.
func errNoMandates() error {
	return intentd.Errorf(intentd.KindNotFound, intentd.CodeNotFound, "this service's store keeps no mandates")
}

// CreateMandate verifies and stores a new mandate.
func (e *Engine) CreateMandate(ctx context.Context, sub intentd.MandateSubmission) error {
	if e.mandateStore == nil {
		return errNoMandates()
	}
	md := sub.Mandate
	if _, _, err := e.checkAttrsOf(ctx, "mandate", md.PolicyID, md.Attrs); err != nil {
		return err
	}
	now := e.cfg.Now()
	if !md.ExpiresAt.After(now) {
		return intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidMandate,
			"mandate.expires_at: %s has passed", md.ExpiresAt.Format(time.RFC3339))
	}
	if err := e.verifyAuthorship(sub.Canonical, sub.Authorship); err != nil {
		return err
	}
	auth, err := sub.Authorship.MarshalJSON()
	if err != nil {
		return intentd.Internal("encode mandate authorship: %w", err)
	}
	id, _ := intentd.CanonicalIntentID(md.ID)
	rec := &mandateRecord{
		V:         mandateRecordVersion,
		ID:        id,
		PolicyID:  md.PolicyID,
		Authored:  joinAuthoredAs("mandate", sub.Canonical, auth),
		CreatedAt: now,
		ExpiresAt: md.ExpiresAt.UTC(),
		Purchases: []mandatePurchase{},
	}
	data, err := rec.encode()
	if err != nil {
		return intentd.Internal("encode mandate: %w", err)
	}
	err = e.mandateStore.CreateMandate(ctx, id, data)
	if errors.Is(err, intentd.ErrExists) {
		return intentd.Errorf(intentd.KindConflict, intentd.CodeMandateExists, "mandate %s already exists", id)
	}
	if err != nil {
		return storeFailed("store mandate: %w", err)
	}
	return nil
}

// joinAuthoredAs is {"<name>": object, "authorship": authorship}.
func joinAuthoredAs(name string, object, authorship []byte) json.RawMessage {
	b := make([]byte, 0, len(name)+len(object)+len(authorship)+20)
	b = append(b, `{"`+name+`":`...)
	b = append(b, object...)
	b = append(b, `,"authorship":`...)
	b = append(b, authorship...)
	return append(b, '}')
}

// readMandate reads a mandate's record from the store.
func (e *Engine) readMandate(ctx context.Context, rawID string) (*mandateRecord, error) {
	if e.mandateStore == nil {
		return nil, errNoMandates()
	}
	id, ok := intentd.CanonicalIntentID(rawID)
	if !ok {
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeMandateNotFound, "mandate %q not found: not a UUID", rawID)
	}
	rec, _, err := e.loadMandate(ctx, id)
	return rec, err
}

// loadMandate reads and decodes the record of mandate id, a canonical id, and its
// revision, with the service's errors.
func (e *Engine) loadMandate(ctx context.Context, id string) (*mandateRecord, uint64, error) {
	data, rev, err := e.mandateStore.Mandate(ctx, id)
	if errors.Is(err, intentd.ErrNotFound) {
		return nil, 0, mandateNotFound(id)
	}
	if err != nil {
		return nil, 0, storeFailed("read mandate: %w", err)
	}
	rec, err := decodeMandateRecord(data)
	if err != nil {
		return nil, 0, intentd.Internal("decode mandate: %w", err)
	}
	return rec, rev, nil
}

// GetMandate returns a stored mandate with its authorship.
func (e *Engine) GetMandate(ctx context.Context, id string) (json.RawMessage, error) {
	rec, err := e.readMandate(ctx, id)
	if err != nil {
		return nil, err
	}
	return rec.Authored, nil
}

// MandateStatus returns a mandate's status, read from the store.
func (e *Engine) MandateStatus(ctx context.Context, id string) (intentd.MandateStatus, error) {
	rec, p, parts, err := e.mandateWithPolicy(ctx, id)
	if err != nil {
		return intentd.MandateStatus{}, err
	}
	return rec.status(p, parts.attrs, e.cfg.Now()), nil
}

// mandateWithPolicy reads a mandate with its policy and attrs.
func (e *Engine) mandateWithPolicy(ctx context.Context, id string) (*mandateRecord, *policy.Policy, mandateParts, error) {
	rec, err := e.readMandate(ctx, id)
	if err != nil {
		return nil, nil, mandateParts{}, err
	}
	p, err := e.mandatePolicy(ctx, rec.PolicyID)
	if err != nil {
		return nil, nil, mandateParts{}, err
	}
	parts, err := rec.parts()
	if err != nil {
		return nil, nil, mandateParts{}, intentd.Internal("read mandate: %w", err)
	}
	return rec, p, parts, nil
}

// mandatePolicy is a mandate's policy: the stored one, or, once it is deleted, the
// bytecode kept for proofs, so that the mandate's status and the decisions of the
// purchases it took before still read it. A purchase of a deleted policy is refused
// when its intent is created.
func (e *Engine) mandatePolicy(ctx context.Context, id string) (*policy.Policy, error) {
	p, err := e.Policy(ctx, id)
	if intentd.ErrorCode(err) != intentd.CodePolicyNotFound {
		return p, err
	}
	bytecode, berr := e.store.PolicyBytecode(ctx, id)
	if berr != nil {
		return nil, err
	}
	p, derr := policy.Decode(bytecode)
	if derr != nil {
		return nil, intentd.Internal("decode policy bytecode: %w", fmt.Errorf("%s: %w", id, derr))
	}
	return p, nil
}

// Purchase takes a purchase under a mandate: the mandate lists its intent (refusing it
// when it takes no purchase), the intent is created with the mandate's policy and
// attrs, and its one proposal made. Each step answers a try again as it answered the
// first, so a caller whose answer was lost sends the same purchase again.
func (e *Engine) Purchase(ctx context.Context, rawID string, pu intentd.Purchase, by *intentd.AgentSignature) error {
	if e.mandateStore == nil {
		return errNoMandates()
	}
	mandateID, ok := intentd.CanonicalIntentID(rawID)
	if !ok {
		return intentd.Errorf(intentd.KindNotFound, intentd.CodeMandateNotFound, "mandate %q not found: not a UUID", rawID)
	}
	intentID, ok := intentd.CanonicalIntentID(pu.IntentID)
	if !ok {
		return intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidPurchase, "purchase.intent_id: %q is not a UUID", pu.IntentID)
	}
	proposal := intentd.Proposal{Solution: pu.Solution}
	if err := e.checkSolution(proposal); err != nil {
		return err
	}
	if by != nil {
		if err := e.spendNonce(ctx, by); err != nil {
			return err
		}
	}
	v, err := e.mandateCall(ctx, mandateID, mTake{intentID: intentID, at: e.cfg.Now(), by: by})
	if err != nil {
		return err
	}
	t := v.(*taken)
	if err := e.createPurchase(ctx, t.rec, t.parts, intentID); err != nil {
		return err
	}
	_, err = e.registry.call(ctx, intentID, propose{proposal: proposal, agent: by, purchase: true})
	if intentd.ErrorCode(err) == intentd.CodeProposalExists {
		// A try again of a purchase taken before: it stands if it is this one.
		if s, lerr := e.loadSnapshot(ctx, intentID); lerr == nil && s.Proposal != nil && *s.Proposal == proposal {
			return nil
		}
	}
	return err
}

// checkPurchaser refuses a purchase the mandate's policy does not delegate to its
// signer, before the mandate lists it: the intent would refuse its proposal the same
// way, after the mandate had listed it.
func checkPurchaser(rec *mandateRecord, p *policy.Policy, parts mandateParts, by *intentd.AgentSignature) error {
	param, delegated := p.Agents()
	switch {
	case !delegated:
		return nil
	case by == nil:
		return intentd.Errorf(intentd.KindUnauthorized, intentd.CodeAgentSignatureRequired,
			"mandate %s delegates to the agents its parameter %s lists: sign the purchase with an agent's key (RFC 9421; docs/agents.md)", rec.ID, param)
	case !intentd.Delegates(p, parts.attrs, by.Key):
		return intentd.Errorf(intentd.KindForbidden, intentd.CodeAgentNotDelegated,
			"mandate %s does not delegate to agent %s: its parameter %s does not list the key", rec.ID, by.Key, param)
	}
	return nil
}

// createPurchase creates the intent of a purchase the mandate took: its policy and
// attrs are the mandate's, its authorship Unsigned (the mandate's author signed the
// mandate, which the purchase's receipt binds), and its snapshot names the mandate. A
// create answered intent_exists by an intent of this mandate is a try again.
func (e *Engine) createPurchase(ctx context.Context, rec *mandateRecord, parts mandateParts, intentID string) error {
	canon, err := rec.purchaseIntent(parts, intentID)
	if err != nil {
		return intentd.Internal("encode purchase intent: %w", err)
	}
	now := e.cfg.Now()
	snap := &snapshot{
		V:         snapshotVersion,
		ID:        intentID,
		PolicyID:  rec.PolicyID,
		State:     intentd.StateOpen,
		CreatedAt: now,
		ExpiresAt: now.Add(e.cfg.IntentTTL),
		Mandate:   rec.ID,
		// Proving reads the attrs the mandate's actor decoded, rather than decode
		// them again from the intent: they are the same.
		attrs: &parts.attrs,
	}
	if err := snap.setAuthored(canon, crypto.Authorship{}); err != nil {
		return intentd.Internal("encode purchase intent: %w", err)
	}
	_, err = e.registry.call(ctx, intentID, create{snap: snap})
	if intentd.ErrorCode(err) == intentd.CodeIntentExists {
		// Another intent's id is refused; this mandate's, created by a try before, is
		// the purchase sent again.
		if s, lerr := e.loadSnapshot(ctx, intentID); lerr == nil && s.Mandate == rec.ID {
			return nil
		}
	}
	return err
}

// RevokeMandate takes the author's revocation of a mandate: its authorship must verify
// over the revocation and be the mandate's author's.
func (e *Engine) RevokeMandate(ctx context.Context, rawID string, r intentd.Revocation) error {
	rec, err := e.readMandate(ctx, rawID)
	if err != nil {
		return err
	}
	var am intentd.AuthoredMandate
	if err := json.Unmarshal(rec.Authored, &am); err != nil {
		return intentd.Internal("read mandate: %w", fmt.Errorf("%s: %w", rec.ID, err))
	}
	// An unsigned mandate takes an unsigned revocation, whatever the server now allows:
	// a revocation only takes authority away.
	opts := e.cfg.Verify
	opts.AllowUnsigned = am.Authorship.Unsigned()
	if err := crypto.VerifyCanonical(r.Canonical, r.Authorship, opts); err != nil {
		if errors.Is(err, crypto.ErrUnsignedNotPermitted) {
			return intentd.Errorf(intentd.KindForbidden, intentd.CodeRevocationForbidden,
				"mandate %s was signed: only its author's signature revokes it", rec.ID)
		}
		return intentd.Errorf(intentd.KindInvalid, intentd.CodeAuthorshipInvalid, "%v", err)
	}
	if !intentd.SameAuthor(am.Authorship, r.Authorship) {
		return intentd.Errorf(intentd.KindForbidden, intentd.CodeRevocationForbidden,
			"the revocation is not signed by the author of mandate %s", rec.ID)
	}
	auth, err := r.Authorship.MarshalJSON()
	if err != nil {
		return intentd.Internal("encode revocation authorship: %w", err)
	}
	_, err = e.mandateCall(ctx, rec.ID, mRevoke{authored: joinAuthoredAs("revocation", r.Canonical, auth), at: e.cfg.Now()})
	return err
}

// mandateVerdict decides a purchase on its evidence under its mandate. commit: the
// decision of the purchase's proposal, which the mandate's actor makes and counts; a
// preview's is made on the totals as they are, and counts nothing.
func (e *Engine) mandateVerdict(ctx context.Context, snap *snapshot, p *policy.Policy, attrs policy.Attrs,
	ev map[string]any, evJSON json.RawMessage, commit bool) (*verdict, error) {
	if commit {
		v, err := e.mandateCall(ctx, snap.Mandate, mDecide{intentID: snap.ID, takenAt: snap.CreatedAt, p: p, attrs: attrs, evidence: ev, evJSON: evJSON})
		if err != nil {
			return nil, err
		}
		return v.(*verdict), nil
	}
	rec, err := e.readMandate(ctx, snap.Mandate)
	if err != nil {
		return nil, err
	}
	digest, err := crypto.Digest(rec.Authored)
	if err != nil {
		return nil, intentd.Internal("digest of the mandate: %w", err)
	}
	v := rec.evaluate(p, attrs, ev, e.cfg.Now())
	v.digest = digest
	return v, nil
}

// releasePurchase takes back the success of a purchase whose receipt failed, before
// its failure is written: until the release is written it is tried again, as an
// outcome is delivered. It reports false when the engine closes first: the outcome is
// then abandoned, and the purchase proved again on the next start.
func (e *Engine) releasePurchase(snap *snapshot) bool {
	backoff := 10 * time.Millisecond
	for {
		_, err := e.mandateCall(e.ctx, snap.Mandate, mRelease{intentID: snap.ID})
		if err == nil {
			return true
		}
		e.log.Error("release a purchase whose proof failed", "mandate_id", snap.Mandate, "intent_id", snap.ID, "err", err)
		select {
		case <-e.ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
