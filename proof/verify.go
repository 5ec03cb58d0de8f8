package proof

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/strictjson"
	"github.com/intentd/intentd/policy"
)

// The checks of Verify, as VerifyError.Check names them.
const (
	CheckBundle               = "bundle"                 // the bundle's shape: fields, JSON, encodings
	CheckKey                  = "key"                    // the receipt names another key than the one checked against
	CheckSignature            = "signature"              // the receipt's signature
	CheckAuthoredIntentDigest = "authored_intent_digest" // the authored intent against the receipt
	CheckProposalDigest       = "proposal_digest"        // the proposal against the receipt
	CheckEvidenceDigest       = "evidence_digest"        // the evidence against the receipt
	CheckPolicy               = "policy"                 // the bytecode against the policy id, and that it loads
	CheckIntent               = "intent"                 // the intent's form, id and policy id against the receipt
	CheckAuthorship           = "authorship"             // the intent's signature
	CheckEvaluation           = "evaluation"             // the policy re-run on the evidence against the receipt's outcome
	CheckAgent                = "agent"                  // the agent's signature, what it covers, and the intent's delegation (agent.go)
	// CheckLog (log.go) is the transparency log inclusion, when the bundle has one.
)

// VerifyError is the error of a failed Verify: which check failed, and a message
// that says what did not match.
type VerifyError struct {
	Check   string
	Message string
}

func (e *VerifyError) Error() string { return e.Message }

func verifyErr(check, format string, args ...any) *VerifyError {
	return &VerifyError{Check: check, Message: fmt.Sprintf(format, args...)}
}

// VerifyReport is what a verified proof bundle establishes.
type VerifyReport struct {
	IntentID string           `json:"intent_id"`
	PolicyID string           `json:"policy_id"`
	Outcome  intentd.State    `json:"outcome"`
	Failures []policy.Failure `json:"constraint_failures"`
	// FailureKind is "constraints" or "evidence" on a failure, as the re-evaluation
	// decides it (intentd.ClassifyFailures); empty on success.
	FailureKind intentd.FailureKind `json:"failure_kind,omitempty"`
	// EvidenceMissing names the evidence fields the re-evaluation found absent or
	// ill-typed; absent when none.
	EvidenceMissing []string  `json:"evidence_missing,omitempty"`
	IssuedAt        time.Time `json:"issued_at"`
	// KeyID and PublicKey (Base58) are the service key the receipt verified under.
	KeyID     string `json:"key_id"`
	PublicKey string `json:"public_key"`
	// KeyTrusted is true when that key was given by the caller. When false the key
	// came from the bundle itself, which shows that the bundle is whole and consistent
	// but not that the service one trusts made it.
	KeyTrusted bool `json:"key_trusted"`
	// Authorship is the form of the intent's authorship: "Unsigned", "Ed25519",
	// "Passkey" or "Multisig".
	Authorship string `json:"authorship"`
	// AuthorKey is the Base58 public key of an Ed25519 or Passkey author; empty otherwise.
	AuthorKey string `json:"author_key,omitempty"`
	// Log is what the bundle's log inclusion showed; nil when it had none.
	Log *LogReport `json:"log,omitempty"`
	// Agent is the agent that signed the proposal, of a version 3 receipt; nil when
	// the proposal was not signed.
	Agent *AgentReport `json:"agent,omitempty"`
	// Mandate is the mandate the purchase was decided under, of a version 4 receipt;
	// nil for an intent of its own.
	Mandate *MandateReport `json:"mandate,omitempty"`
	// Notes are the limits of what was checked, for a person to read.
	Notes []string `json:"notes"`
}

// bundleWire reads a bundle keeping each part's bytes as sent, since the digests are
// of those bytes (through JCS), not of a re-encoding.
type bundleWire struct {
	Receipt        json.RawMessage `json:"receipt"`
	AuthoredIntent json.RawMessage `json:"authored_intent"`
	Proposal       json.RawMessage `json:"proposal"`
	Evidence       json.RawMessage `json:"evidence"`
	PolicyBytecode []byte          `json:"policy_bytecode"`
	// Log is optional: bundles of servers without a log, and older bundles, have none.
	Log *intentd.LogInclusion `json:"log"`
	// LogWitnesses is the server's word on the checkpoint's cosignatures; a verifier
	// with a witness policy checks the cosignatures themselves (VerifyWitnessed).
	LogWitnesses *intentd.LogWitnessing `json:"log_witnesses"`
	// Agent is what the agent signed, with a version 3 receipt only.
	Agent *intentd.ProofAgent `json:"agent"`
	// AuthoredMandate is the mandate of a purchase, with a version 4 receipt only.
	AuthoredMandate json.RawMessage `json:"authored_mandate"`
}

// LogReport is what a verified log inclusion establishes: the receipt is leaf
// LeafIndex of the tree of TreeSize leaves under the checkpoint of Origin.
type LogReport struct {
	Origin    string `json:"origin"`
	LeafIndex uint64 `json:"leaf_index"`
	TreeSize  uint64 `json:"tree_size"`
	// RootHash is the checkpoint's root, standard Base64 as the checkpoint writes it.
	RootHash []byte `json:"root_hash"`
	// Cosigners are the witnesses, by their names in the verifier's policy, whose
	// cosignatures of the checkpoint verified; only with a policy (VerifyWitnessed).
	Cosigners []string `json:"cosigners,omitempty"`
}

// Verify checks a proof bundle (the JSON of a ProofBundle) offline: the receipt's
// signature under trustedKey, or under the key the bundle carries when trustedKey is nil
// (the report then says the key was not trusted); the digests of the authored intent,
// the proposal and the evidence; that the bytecode hashes to the policy id; the intent's
// id, policy id and authorship (an unsigned intent passes, and the report says so); and
// that the policy, run again on the evidence with the intent's attrs, gives the
// receipt's outcome and exactly its constraint failures, and, for a receipt of version
// 2, its failure kind and missing evidence fields; for a receipt of version 3, that
// the agent it names signed the proposal's request and that the intent delegates to
// it (checkAgent); and, when the bundle carries one,
// its transparency log inclusion (VerifyLogInclusion). The first check that fails is
// returned as a *VerifyError naming it.
func Verify(bundle []byte, trustedKey ed25519.PublicKey) (*VerifyReport, error) {
	w, signed, err := decodeBundle(bundle)
	if err != nil {
		return nil, err
	}
	r := &signed.Receipt
	report := &VerifyReport{KeyTrusted: trustedKey != nil}
	key, err := checkKey(signed, trustedKey, report)
	if err != nil {
		return nil, err
	}
	if err := checkDigests(w, r); err != nil {
		return nil, err
	}
	p, err := loadPolicy(w.PolicyBytecode, r)
	if err != nil {
		return nil, err
	}
	in, err := checkIntent(w.AuthoredIntent, r, report)
	if err != nil {
		return nil, err
	}
	var proposal struct {
		Solution string `json:"solution"`
	}
	if err := decodeStrict(w.Proposal, &proposal); err != nil || proposal.Solution == "" {
		return nil, verifyErr(CheckBundle, "proof bundle: proposal is not {\"solution\": non-empty string}")
	}
	if err := checkEvaluation(w, p, in, r, report); err != nil {
		return nil, err
	}
	if err := checkAgent(w, p, in, proposal.Solution, r, report); err != nil {
		return nil, err
	}
	// Last: whether the receipt was published matters once it is known to be right.
	if err := checkLog(w, r, key, report); err != nil {
		return nil, err
	}
	report.IntentID, report.PolicyID = r.IntentID, r.PolicyID
	report.IssuedAt = r.IssuedAt
	report.KeyID, report.PublicKey = r.KeyID, crypto.EncodeBase58(key)
	report.Notes = append(report.Notes, "the evidence is the extractor's account of the solution: "+
		"the receipt shows the policy holds (or fails) on it, not that it is true")
	return report, nil
}

// VerifyWitnessed is Verify, and then requires of the bundle's log checkpoint what the
// witness policy asks: a log key the policy names, when it names any, and valid
// cosignatures of enough of its witnesses for its quorum. A bundle without a log
// inclusion fails, since there is no checkpoint to have been witnessed. The check that
// fails is CheckWitnesses; the report names the cosigners.
func VerifyWitnessed(bundle []byte, trustedKey ed25519.PublicKey, policy *WitnessPolicy) (*VerifyReport, error) {
	report, err := Verify(bundle, trustedKey)
	if err != nil {
		return nil, err
	}
	var w bundleWire
	if err := json.Unmarshal(bundle, &w); err != nil {
		return nil, verifyErr(CheckBundle, "proof bundle is not valid: %v", err)
	}
	if w.Log == nil {
		return nil, verifyErr(CheckWitnesses, "the bundle carries no transparency log checkpoint for the witnesses to have cosigned")
	}
	pub, err := crypto.DecodeBase58(report.PublicKey)
	if err != nil {
		return nil, verifyErr(CheckKey, "public key: %v", err)
	}
	if err := policy.CheckLogKey(report.Log.Origin, pub); err != nil {
		return nil, verifyErr(CheckWitnesses, "%v", err)
	}
	names, err := policy.CheckQuorum([]byte(w.Log.Checkpoint))
	if err != nil {
		return nil, err
	}
	report.Log.Cosigners = names
	report.Notes = append(report.Notes, "the checkpoint carries the cosignatures the witness policy's quorum asks for: "+
		"a history other than the one those witnesses saw would need them to collude")
	return report, nil
}

// decodeBundle reads a bundle's parts, each required but the log, and its receipt.
func decodeBundle(bundle []byte) (*bundleWire, *crypto.SignedReceipt, error) {
	// Canonicalize refuses duplicate keys, which encoding/json would let through with
	// the last one winning.
	if _, err := crypto.Canonicalize(bundle); err != nil {
		return nil, nil, verifyErr(CheckBundle, "proof bundle is not valid JSON: %v", err)
	}
	var w bundleWire
	if err := decodeStrict(bundle, &w); err != nil {
		return nil, nil, verifyErr(CheckBundle, "proof bundle is not valid: %v", err)
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"receipt", w.Receipt}, {"authored_intent", w.AuthoredIntent}, {"proposal", w.Proposal}, {"evidence", w.Evidence}} {
		if len(f.raw) == 0 || bytes.Equal(f.raw, []byte("null")) {
			return nil, nil, verifyErr(CheckBundle, "proof bundle: %s is missing", f.name)
		}
	}
	if len(w.PolicyBytecode) == 0 {
		return nil, nil, verifyErr(CheckBundle, "proof bundle: policy_bytecode is missing")
	}
	signed, err := crypto.DecodeSignedReceipt(w.Receipt)
	if err != nil {
		return nil, nil, verifyErr(CheckBundle, "proof bundle: receipt: %v", err)
	}
	return &w, signed, nil
}

// checkKey checks the receipt's signature under trustedKey, or under the bundle's own
// key when trustedKey is nil, and returns the key it verified under.
func checkKey(signed *crypto.SignedReceipt, trustedKey ed25519.PublicKey, report *VerifyReport) (ed25519.PublicKey, error) {
	r := &signed.Receipt
	key := trustedKey
	if key == nil {
		key = signed.PublicKey
		report.Notes = append(report.Notes, "no trusted key was given: the receipt was checked against the key in the bundle, "+
			"which shows the bundle is consistent, not who made it; compare the key id with the service's (GET /info)")
	}
	if len(key) != ed25519.PublicKeySize {
		return nil, verifyErr(CheckKey, "trusted key is %d bytes, want a %d-byte Ed25519 public key", len(key), ed25519.PublicKeySize)
	}
	if id := crypto.KeyID(key); r.KeyID != id {
		if trustedKey != nil {
			return nil, verifyErr(CheckKey, "receipt is signed by key %s, not by the trusted key %s", r.KeyID, id)
		}
		return nil, verifyErr(CheckKey, "receipt names key %s, but the bundle's public key is %s", r.KeyID, id)
	}
	if err := crypto.VerifyReceipt(signed, key); err != nil {
		return nil, verifyErr(CheckSignature, "receipt %v", err)
	}
	return key, nil
}

// checkDigests checks the bundle's authored intent, proposal and evidence against the
// digests the receipt signs.
func checkDigests(w *bundleWire, r *crypto.Receipt) error {
	for _, d := range []struct {
		check, what string
		raw         json.RawMessage
		want        string
	}{
		{CheckAuthoredIntentDigest, "authored intent", w.AuthoredIntent, r.AuthoredIntentDigest},
		{CheckProposalDigest, "proposal", w.Proposal, r.ProposalDigest},
		{CheckEvidenceDigest, "evidence", w.Evidence, r.EvidenceDigest},
	} {
		got, err := crypto.Digest(d.raw)
		if err != nil {
			return verifyErr(d.check, "%s digest cannot be computed: %v", d.what, err)
		}
		if got != d.want {
			return verifyErr(d.check, "%s digest does not match: the bundle's %s digests to %s, the receipt says %s", d.what, d.what, got, d.want)
		}
	}
	return nil
}

// loadPolicy loads the bytecode once it hashes to the receipt's policy id.
func loadPolicy(bytecode []byte, r *crypto.Receipt) (*policy.Policy, error) {
	sum := sha256.Sum256(bytecode)
	if id := crypto.EncodeBase58(sum[:]); id != r.PolicyID {
		return nil, verifyErr(CheckPolicy, "policy bytecode hashes to %s, the receipt names policy %s", id, r.PolicyID)
	}
	p, err := policy.Decode(bytecode)
	if err != nil {
		return nil, verifyErr(CheckPolicy, "policy bytecode does not load: %v", err)
	}
	return p, nil
}

// noteUnsignedIntent is the note of an unsigned intent.
const noteUnsignedIntent = "the intent is unsigned: nobody is shown to have authorized it"

// checkIntent decodes the authored intent, checks its id and policy id against the
// receipt and its authorship, and reports the authorship's form.
func checkIntent(raw json.RawMessage, r *crypto.Receipt, report *VerifyReport) (intentd.Intent, error) {
	var authored struct {
		Intent     json.RawMessage   `json:"intent"`
		Authorship crypto.Authorship `json:"authorship"`
	}
	if err := decodeStrict(raw, &authored); err != nil {
		return intentd.Intent{}, verifyErr(CheckIntent, "authored intent is not valid: %v", err)
	}
	if len(authored.Intent) == 0 {
		return intentd.Intent{}, verifyErr(CheckIntent, "authored intent: intent is missing")
	}
	in, err := intentd.DecodeIntent(authored.Intent)
	if err != nil {
		return intentd.Intent{}, verifyErr(CheckIntent, "authored intent: %v", err)
	}
	if id, _ := intentd.CanonicalIntentID(in.ID); id != r.IntentID {
		return intentd.Intent{}, verifyErr(CheckIntent, "the authored intent's id is %s, the receipt's intent_id is %s", in.ID, r.IntentID)
	}
	if in.PolicyID != r.PolicyID {
		return intentd.Intent{}, verifyErr(CheckIntent, "the authored intent names policy %s, the receipt names %s", in.PolicyID, r.PolicyID)
	}
	if err := crypto.Verify(authored.Intent, authored.Authorship, crypto.VerifyOptions{AllowUnsigned: true}); err != nil {
		return intentd.Intent{}, verifyErr(CheckAuthorship, "intent authorship does not verify: %v", err)
	}
	report.Authorship, report.AuthorKey = describeAuthorship(authored.Authorship)
	switch report.Authorship {
	case "Unsigned":
		report.Notes = append(report.Notes, noteUnsignedIntent)
	case "Passkey", "Multisig":
		report.Notes = append(report.Notes, "passkey signatures were checked over the intent; their origin and relying party "+
			"were checked by the service at submission, not here")
	}
	return in, nil
}

// checkEvaluation runs the policy again on the evidence with the intent's attrs, checks
// that it gives the receipt's outcome and failures, and reports them.
func checkEvaluation(w *bundleWire, p *policy.Policy, in intentd.Intent, r *crypto.Receipt, report *VerifyReport) error {
	dec := json.NewDecoder(bytes.NewReader(w.Evidence))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil || ev == nil {
		return verifyErr(CheckBundle, "proof bundle: evidence is not a JSON object")
	}
	attrs := policy.Attrs{}
	if in.Attrs != nil {
		attrs = *in.Attrs
	}
	c, err := checkMandate(w, p, in, ev, r, report)
	if err != nil {
		return err
	}
	failures := p.EvaluateIn(attrs, ev, c)
	outcome := intentd.StateSuccess
	if len(failures) > 0 {
		outcome = intentd.StateFailure
	}
	if string(outcome) != r.Outcome {
		return verifyErr(CheckEvaluation, "re-evaluation gives %s, the receipt says %s", outcome, r.Outcome)
	}
	if err := sameFailures(failures, r.ConstraintFailures); err != nil {
		return err
	}
	kind, missing := intentd.ClassifyFailures(failures)
	if r.Version == crypto.ReceiptVersion1 {
		if outcome == intentd.StateFailure {
			report.Notes = append(report.Notes, fmt.Sprintf("a version %d receipt does not state the failure's kind: "+
				"%s is the re-evaluation's, not signed", crypto.ReceiptVersion1, kind))
		}
	} else if err := sameKind(kind, missing, r); err != nil {
		return err
	}
	report.Outcome = outcome
	report.Failures, report.FailureKind, report.EvidenceMissing = failures, kind, missing
	if report.Failures == nil {
		report.Failures = []policy.Failure{}
	}
	return nil
}

// checkLog checks the bundle's transparency log inclusion, when it carries one, and
// reports what it shows.
func checkLog(w *bundleWire, r *crypto.Receipt, key ed25519.PublicKey, report *VerifyReport) error {
	if w.Log == nil {
		report.Notes = append(report.Notes, "the bundle carries no transparency log inclusion: nothing shows the outcome was published to everyone")
		return nil
	}
	cp, err := VerifyLogInclusion(w.Log, w.Receipt, r, key)
	if err != nil {
		return err
	}
	report.Log = &LogReport{Origin: cp.Origin, LeafIndex: w.Log.LeafIndex, TreeSize: cp.Size, RootHash: cp.Hash}
	report.Notes = append(report.Notes, "the log shows this receipt in the history the checkpoint commits to; "+
		"that everyone is shown the same history needs the checkpoint compared with others' (intentctl log watch, a witness)")
	return nil
}

// sameFailures compares the failures of a re-evaluation with the receipt's, field by field.
func sameFailures(got []policy.Failure, want []crypto.ConstraintFailure) error {
	if len(got) != len(want) {
		return verifyErr(CheckEvaluation, "re-evaluation gives %d constraint failures, the receipt lists %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		switch {
		case g.Index != w.Index:
			return verifyErr(CheckEvaluation, "constraint failure %d: re-evaluation gives index %d, the receipt says %d", i, g.Index, w.Index)
		case g.PrettyExpr != w.PrettyExpr:
			return verifyErr(CheckEvaluation, "constraint failure %d: re-evaluation gives pretty_expr %q, the receipt says %q", i, g.PrettyExpr, w.PrettyExpr)
		case g.Reason != w.Reason:
			return verifyErr(CheckEvaluation, "constraint failure %d: re-evaluation gives reason %q, the receipt says %q", i, g.Reason, w.Reason)
		}
	}
	return nil
}

// sameKind compares the kind and the missing evidence of a re-evaluation with what a
// version 2 receipt states.
func sameKind(kind intentd.FailureKind, missing []string, r *crypto.Receipt) error {
	if string(kind) != r.FailureKind {
		return verifyErr(CheckEvaluation, "re-evaluation gives failure kind %q, the receipt says %q", kind, r.FailureKind)
	}
	if !slices.Equal(missing, r.EvidenceMissing) {
		return verifyErr(CheckEvaluation, "re-evaluation finds evidence missing %q, the receipt says %q", missing, r.EvidenceMissing)
	}
	return nil
}

func describeAuthorship(a crypto.Authorship) (form, key string) {
	switch s := a.Signature; {
	case s == nil:
		return "Unsigned", ""
	case s.Ed25519 != nil:
		return "Ed25519", crypto.EncodeBase58(s.Ed25519.PubKey)
	case s.Passkey != nil:
		return "Passkey", crypto.EncodeBase58(s.Passkey.PubKey)
	default:
		return "Multisig", ""
	}
}

// decodeStrict decodes one JSON value into v, refusing unknown fields, repeated names
// and trailing data.
func decodeStrict(data []byte, v any) error {
	return strictjson.Unmarshal(data, v)
}
