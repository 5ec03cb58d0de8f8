package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/internal/strictjson"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/proof"
)

// The roles the tools need, as bearer tokens carry them (docs/operating.md).
const (
	roleRead    = "read"
	rolePropose = "propose"
)

// codeForbidden is the code of a tool refused for want of a role: the code the HTTP
// API answers 403 with.
const codeForbidden = "forbidden"

// codeInvalidArguments is the code of a tool call refused for the form of its
// arguments, which the SDK's schema check lets through: a member named twice.
const codeInvalidArguments = "invalid_arguments"

// maxArgumentMembers bounds the members of a tool's arguments as read for repeated
// names, as the HTTP API bounds a body's; no tool takes more than three.
const maxArgumentMembers = 16

// Options configure a Server.
type Options struct {
	// Version is the version the server reports to clients.
	Version string
	// Logger receives internal errors; nil discards them.
	Logger *slog.Logger
	// RequireRoles makes each tool need its role in the bearer token of its request
	// (the token information the SDK's RequireBearerToken puts in the request): set it
	// where the HTTP transport serves a server with tokens. Off, every tool may be
	// called, which is right over stdio, where the server reached checks the token.
	RequireRoles bool
	// MaxWait bounds await_outcome; 60 s when 0. A wait asked for beyond it is cut to it.
	MaxWait time.Duration
}

// Server is the MCP server of the tools over one Backend.
type Server struct {
	b    Backend
	opts Options
	log  *slog.Logger
	mcp  *mcp.Server
}

// DefaultWait is how long await_outcome waits when its caller does not say.
const DefaultWait = 20 * time.Second

// New returns the MCP server of the tools over b.
func New(b Backend, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 60 * time.Second
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{b: b, opts: opts, log: opts.Logger}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "intentd", Title: "intentd: intents, previews, proposals and proofs", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions})
	s.mcp.AddReceivingMiddleware(boundAnswers)
	s.addTools()
	return s
}

// instructions are given to the client at initialization, for the model's context.
const instructions = "intentd holds intents: a person's signed request (buy a navy t-shirt, size M, under $30) that names a " +
	"policy, a list of constraints on evidence about a solution. Each intent takes exactly ONE proposal, which is final. " +
	"Call get_intent first to learn the attrs and what evidence the policy reads, and get_requirements for what that " +
	"evidence must satisfy with the attrs put in; call preview_solution on each " +
	"candidate, as often as needed within its limit, since previews spend nothing; then call propose_solution once, " +
	"with a candidate whose preview succeeded; then await_outcome, and get_proof for the signed receipt. " +
	"Under a mandate (one signed authorization for many purchases under a budget) there is no intent to read first: " +
	"call get_mandate for its limits and what remains, then purchase once per item, then await_outcome with the " +
	"purchase's intent_id."

// MCP returns the SDK's server, to connect to any transport (Run with an
// mcp.StdioTransport, say).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// HTTPHandler serves the tools on the streamable HTTP transport, stateless: every
// request stands alone, so that no session is kept in memory between an agent's calls
// and any node of a cluster can answer any of them. maxBody bounds a request body (the
// SDK's 4 MiB when 0); a batch holds at most MaxBatchMessages messages, and an answer
// at most MaxAnswerBytes(maxBody) bytes.
func (s *Server) HTTPHandler(maxBody int64) http.Handler {
	if maxBody <= 0 {
		maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              s.log,
		MaxRequestBodyBytes: maxBody,
	})
	return &boundedHTTP{next: h, maxBody: maxBody, maxAnswer: MaxAnswerBytes(maxBody)}
}

// The tools' inputs.
type (
	intentArgs struct {
		IntentID string `json:"intent_id" jsonschema:"the intent's id, a UUID such as 3f2b8c1e-6a4d-4e2f-9b1a-7c5d3e9f0a12"`
	}
	solutionArgs struct {
		IntentID string `json:"intent_id" jsonschema:"the intent's id, a UUID"`
		Solution string `json:"solution" jsonschema:"the candidate solution, as the evidence layer knows it: a product URL or a variant id"`
	}
	awaitArgs struct {
		IntentID       string      `json:"intent_id" jsonschema:"the intent's id, a UUID"`
		TimeoutSeconds waitSeconds `json:"timeout_seconds,omitempty" jsonschema:"how long to wait at most, in seconds, 1 to 60 (a value outside is taken as the nearer bound); 20 when absent"`
	}
)

// waitSeconds is await_outcome's timeout_seconds. Its zero value is a wait not asked
// for; any integer given is held to 1 at least and to what an int64 holds at most as it
// is read, so that a wait of 0 or less is the shortest, not the default, and no value
// is out of range of the arithmetic that makes it a duration. The SDK hands it on as a
// float64 written out again (1e+30, 9223372036854775808), so that form is read too.
type waitSeconds int64

// UnmarshalJSON reads any JSON integer; a number with a fraction is refused, as the
// schema's "integer" refuses it first.
func (w *waitSeconds) UnmarshalJSON(b []byte) error {
	text := string(b)
	if text == "null" {
		return nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(text, 64)
		if ferr != nil && !errors.Is(ferr, strconv.ErrRange) || f != math.Trunc(f) {
			return fmt.Errorf("timeout_seconds: %s is not a whole number of seconds", clip(text))
		}
		switch {
		case f >= math.MaxInt64: // float64(math.MaxInt64) is 2^63, past it
			n = math.MaxInt64
		case f <= math.MinInt64:
			n = math.MinInt64
		default:
			n = int64(f)
		}
	}
	*w = waitSeconds(max(n, 1))
	return nil
}

// duration is the wait of w, at most longest: the count is compared before it is
// multiplied, since a count of seconds past 292 years overflows a Duration.
func (w waitSeconds) duration(longest time.Duration) time.Duration {
	n := max(int64(w), 1)
	if n > int64(longest/time.Second) {
		return longest
	}
	return time.Duration(n) * time.Second
}

// FieldInfo is a parameter of a policy or an evidence field it reads, with its type.
type FieldInfo struct {
	Name     string `json:"name"`
	Type     string `json:"type" jsonschema:"int, string, bool, set<string> or set<int>"`
	Optional bool   `json:"optional,omitempty" jsonschema:"true for a parameter an intent may omit"`
}

// IntentInfo is the output of get_intent.
type IntentInfo struct {
	IntentID   string         `json:"intent_id"`
	Status     string         `json:"status" jsonschema:"open, processing, success, failure or expired; only an open intent takes a preview or a proposal"`
	Attrs      map[string]any `json:"attrs" jsonschema:"the person's parameters of the policy, by name: what the solution must match"`
	PolicyID   string         `json:"policy_id"`
	PolicyName string         `json:"policy_name"`
	Policy     string         `json:"policy" jsonschema:"the policy in canonical text: its parameters, the evidence it reads and the constraints a solution must satisfy"`
	Parameters []FieldInfo    `json:"parameters"`
	Evidence   []FieldInfo    `json:"evidence" jsonschema:"the evidence fields the policy reads: what is extracted about a candidate and checked"`
	Deadline   string         `json:"deadline,omitempty" jsonschema:"when an open intent expires (RFC 3339); absent when unknown or no longer open"`
	Proposal   string         `json:"proposal,omitempty" jsonschema:"the solution proposed, once there is one"`
}

// FailedConstraint is a constraint a solution breaks.
type FailedConstraint struct {
	Index      int    `json:"index" jsonschema:"the constraint's position in the policy, from 0"`
	Expression string `json:"expression"`
	Reason     string `json:"reason"`
}

// Outcome is a decision, previewed or made: the output of preview_solution and
// await_outcome.
type Outcome struct {
	IntentID          string             `json:"intent_id"`
	Status            string             `json:"status" jsonschema:"success or failure; open or processing from await_outcome when the wait ended first"`
	Solution          string             `json:"solution,omitempty"`
	Explanation       string             `json:"explanation" jsonschema:"what the decision means, in a sentence or two"`
	FailureKind       string             `json:"failure_kind,omitempty" jsonschema:"constraints: the solution breaks the policy; evidence: the evidence lacks fields the policy reads; extraction: no evidence could be had; proof: the service could not decide"`
	FailedConstraints []FailedConstraint `json:"failed_constraints,omitempty"`
	EvidenceMissing   []string           `json:"evidence_missing,omitempty"`
	Evidence          map[string]any     `json:"evidence,omitempty" jsonschema:"the evidence extracted about the solution, that the decision read"`
	// Preview-only fields.
	Proof        *bool  `json:"proof,omitempty" jsonschema:"false on a preview: it is not a proof"`
	Note         string `json:"note,omitempty"`
	PreviewsLeft *int   `json:"previews_left,omitempty" jsonschema:"how many more previews this intent may have; absent when unbounded"`
	// Decided is false when await_outcome's wait ended before the decision.
	Decided *bool `json:"decided,omitempty" jsonschema:"from await_outcome: false when the wait ended before a decision; call it again"`
}

// Proposed is the output of propose_solution.
type Proposed struct {
	IntentID string `json:"intent_id"`
	Solution string `json:"solution"`
	Status   string `json:"status" jsonschema:"processing: the proposal is accepted, on disk, and being decided"`
	Next     string `json:"next"`
}

// ProofInfo is the output of get_proof.
type ProofInfo struct {
	IntentID string `json:"intent_id"`
	Verified bool   `json:"verified" jsonschema:"whether the bundle verifies under the server's key: signature, digests, the policy run again on the evidence, and the log inclusion when the bundle has one"`
	// Outcome is the outcome the receipt states.
	Outcome     string `json:"outcome,omitempty"`
	KeyID       string `json:"key_id,omitempty"`
	PublicKey   string `json:"public_key,omitempty"`
	VerifyError string `json:"verify_error,omitempty" jsonschema:"why the bundle did not verify"`
	Bundle      any    `json:"bundle" jsonschema:"the proof bundle, as GET /intents/{id}/proof answers it: the signed receipt with the authored intent, the proposal, the evidence and the policy bytecode it binds, and log, the outcome's transparency log inclusion, when the server keeps a log and the outcome is in it"`
}

func ptr[T any](v T) *T { return &v }

func (s *Server) addTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "get_intent",
		Title: "Read an intent and its policy",
		Description: "Returns what the person asked for: the intent's attrs (the policy's parameters), its status, its policy " +
			"(name, canonical text, parameters) and the evidence fields the policy reads about a solution, and the deadline. " +
			"Call it first: the attrs and the constraints tell which candidates can pass.",
		Annotations: readOnly,
	}, guarded(s, roleRead, s.getIntent))
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "preview_solution",
		Title: "Preview a candidate (spends nothing)",
		Description: "Decides what proposing this solution would decide (success, or failure with the constraints it breaks and " +
			"why, and the evidence read) WITHOUT proposing it: nothing is stored, the intent stays open and its one proposal " +
			"unspent. Use it on every candidate before propose_solution. An intent has a limited number of previews " +
			"(previews_left says how many remain; code preview_limit when none do). Code capacity_exceeded: retry after a second. " +
			"A preview is not a proof.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(true)},
	}, guarded(s, rolePropose, s.preview))
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "propose_solution",
		Title: "Propose a solution (ONCE per intent)",
		Description: "WARNING: this can be done only ONCE per intent, and cannot be undone or changed: a second proposal is refused " +
			"(code proposal_exists). Proposes the solution; the intent becomes processing and is decided on evidence extracted " +
			"about it. Preview the solution first with preview_solution and propose only one whose preview succeeded; then call " +
			"await_outcome.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, guarded(s, rolePropose, s.propose))
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "await_outcome",
		Title: "Wait for an intent's outcome",
		Description: "Waits, up to timeout_seconds, for the intent to be decided and returns its outcome: success, or failure with an " +
			"explanation and the constraints broken; or expired. When the wait ends first, decided is false: call it again.",
		Annotations: readOnly,
	}, guarded(s, roleRead, s.await))
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "get_proof",
		Title: "Get and verify an intent's proof",
		Description: "Returns the proof bundle of a decided intent (the receipt the service signed, with everything needed to check " +
			"it offline) and whether it verifies under the server's key. Code proof_not_ready while the intent is open or " +
			"processing; no_proof when none will come (expired, or no evidence could be had).",
		Annotations: readOnly,
	}, guarded(s, roleRead, s.getProof))
	s.addRequirementsTool(readOnly)
	s.addMandateTools(readOnly)
}

// guarded checks the role of a tool's caller and turns the tool's errors into tool
// errors carrying the service's code.
func guarded[In, Out any](s *Server, role string, h func(context.Context, In) (Out, error)) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var zero Out
		if err := s.authorize(req, role); err != nil {
			return nil, zero, s.toolError(req.Params.Name, err)
		}
		if err := checkArguments(req.Params.Arguments); err != nil {
			return nil, zero, s.toolError(req.Params.Name, err)
		}
		out, err := h(ctx, in)
		if err != nil {
			return nil, zero, s.toolError(req.Params.Name, err)
		}
		return nil, out, nil
	}
}

func (s *Server) authorize(req *mcp.CallToolRequest, role string) error {
	if !s.opts.RequireRoles {
		return nil
	}
	if req.Extra != nil && req.Extra.TokenInfo != nil && slices.Contains(req.Extra.TokenInfo.Scopes, role) {
		return nil
	}
	return intentd.Errorf(intentd.KindForbidden, codeForbidden, "%s needs the role %s, which this token does not have", req.Params.Name, role)
}

// checkArguments refuses arguments that name a member twice, as the HTTP API refuses
// such a body: the SDK's decoder keeps the last of them and its schema check sees only
// that one, so a call could act on a value other than the one a reader of the request
// (a log, a proxy, a person approving the call) takes it for. The SDK has parsed the
// text and checked it against the schema, which admits only strings and integers, so
// the members' values hold no objects to look into and nothing else can be at fault.
func checkArguments(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	err := strictjson.Members(raw, "", maxArgumentMembers, func(strictjson.Member) error { return nil })
	if e, ok := err.(*strictjson.Error); ok && e.Fault == strictjson.Duplicate {
		return intentd.Errorf(intentd.KindUnprocessable, codeInvalidArguments, "%s: duplicate key", clip(e.Path))
	}
	return nil
}

// ToolError is the error of a refused tool call; its text, which the agent reads, is
// the JSON of the service's error: {"code", "message"}, and retry_after_seconds when
// retrying later may succeed.
type ToolError struct {
	Code              string `json:"code"`
	Message           string `json:"message"`
	RetryAfterSeconds int    `json:"retry_after_seconds,omitempty"`
	// IntentID is, on a refused purchase, the id of the intent it named (made by the
	// tool when the call named none), with which the same purchase is sent again.
	IntentID string `json:"intent_id,omitempty"`
}

func (e *ToolError) Error() string {
	b, _ := json.Marshal(e)
	return string(b)
}

// toolError makes a tool error of err. An internal error is logged with its cause and
// shown as "internal error".
func (s *Server) toolError(tool string, err error) error {
	var e *intentd.Error
	if !errors.As(err, &e) {
		e = intentd.Internal("%w", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		e = intentd.Canceled(err)
	}
	if e.Kind == intentd.KindInternal {
		s.log.Error("tool failed", "tool", tool, "err", err)
		return &ToolError{Code: intentd.CodeInternal, Message: "internal error", IntentID: refusedIntent(err)}
	}
	te := &ToolError{Code: e.Code, Message: e.Message, IntentID: refusedIntent(err)}
	if e.Kind == intentd.KindBusy {
		te.RetryAfterSeconds = 1
	}
	return te
}

// checkID refuses an id that is not a UUID before any backend is asked, with the code
// a lookup of it would get.
func checkID(id string) error {
	if _, ok := intentd.CanonicalIntentID(id); !ok {
		return intentd.Errorf(intentd.KindNotFound, intentd.CodeIntentNotFound, "intent %q not found: not a UUID", clip(id))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func (s *Server) getIntent(ctx context.Context, in intentArgs) (*IntentInfo, error) {
	if err := checkID(in.IntentID); err != nil {
		return nil, err
	}
	ai, err := s.b.Intent(ctx, in.IntentID)
	if err != nil {
		return nil, err
	}
	intent, err := intentd.DecodeIntent(ai.Intent)
	if err != nil {
		return nil, intentd.Internal("read stored intent: %w", err)
	}
	pv, err := s.readPolicy(ctx, intent.PolicyID)
	if err != nil {
		return nil, err
	}
	st, err := s.b.Status(ctx, intent.ID)
	if err != nil {
		return nil, err
	}
	info := &IntentInfo{
		IntentID:   intent.ID,
		Status:     string(st.State),
		Attrs:      plainAttrs(intent.Attrs),
		PolicyID:   intent.PolicyID,
		PolicyName: pv.name,
		Policy:     pv.text,
		Parameters: pv.params,
		Evidence:   pv.evidence,
	}
	if st.Proposal != nil {
		info.Proposal = st.Proposal.Solution
	}
	if st.State == intentd.StateOpen {
		if d, ok, err := s.b.Deadline(ctx, intent.ID); err != nil {
			return nil, err
		} else if ok {
			info.Deadline = d.UTC().Format(time.RFC3339)
		}
	}
	return info, nil
}

// policyView is what an agent reads of a policy: its name, its canonical text, its
// parameters and the evidence fields it reads.
type policyView struct {
	name, text       string
	params, evidence []FieldInfo
}

// readPolicy reads a policy as get_intent and get_mandate show it, alike: the
// parameters and evidence are the compiled policy's, so that they are the ones the
// text declares.
func (s *Server) readPolicy(ctx context.Context, id string) (policyView, error) {
	text, err := s.b.Policy(ctx, id)
	if err != nil {
		return policyView{}, err
	}
	p, err := policy.Compile(text)
	if err != nil {
		return policyView{}, intentd.Internal("compile the policy's canonical text: %w", err)
	}
	v := policyView{name: p.Name(), text: text, params: []FieldInfo{}, evidence: []FieldInfo{}}
	for _, prm := range p.Parameters() {
		v.params = append(v.params, FieldInfo{Name: prm.Name, Type: prm.Type.String(), Optional: prm.Optional})
	}
	for _, f := range p.EvidenceSchema() {
		v.evidence = append(v.evidence, FieldInfo{Name: f.Name, Type: f.Type.String()})
	}
	return v, nil
}

// plainAttrs is attrs as plain JSON by name (see plain); empty, never nil, for none,
// so that the output always has the member.
func plainAttrs(a *policy.Attrs) map[string]any {
	out := map[string]any{}
	if a != nil {
		for name, v := range *a {
			out[name] = plain(v)
		}
	}
	return out
}

// plain is an attribute value as plain JSON: a number, a string, a boolean or an
// array, without the variant names of the wire form, which an agent need not learn.
func plain(v policy.Value) any {
	switch v.Type() {
	case policy.TypeInt:
		return v.Int()
	case policy.TypeBool:
		return v.Bool()
	case policy.TypeStringSet:
		return v.Strings()
	case policy.TypeIntSet:
		return v.Ints()
	default:
		return v.Str()
	}
}

func (s *Server) preview(ctx context.Context, in solutionArgs) (*Outcome, error) {
	if err := checkID(in.IntentID); err != nil {
		return nil, err
	}
	pv, err := s.b.Preview(ctx, in.IntentID, in.Solution)
	if err != nil {
		return nil, err
	}
	o, err := outcomeOf(&pv.Outcome)
	if err != nil {
		return nil, err
	}
	o.Proof, o.Note, o.PreviewsLeft = ptr(false), pv.Note, pv.PreviewsLeft
	o.Explanation = "Preview only, nothing was proposed. " + o.Explanation
	return o, nil
}

func (s *Server) propose(ctx context.Context, in solutionArgs) (*Proposed, error) {
	if err := checkID(in.IntentID); err != nil {
		return nil, err
	}
	if err := s.b.Propose(ctx, in.IntentID, in.Solution); err != nil {
		if intentd.ErrorCode(err) == intentd.CodeAgentSignatureRequired {
			// The tools cannot sign for an agent they do not hold the key of: say how
			// an agent that holds one proposes.
			return nil, intentd.Errorf(intentd.KindUnauthorized, intentd.CodeAgentSignatureRequired,
				"intent %s delegates to the agents its intent lists, and takes only a proposal one of them signed; "+
					"these tools hold no agent key. An agent with its key runs the tools as `intentctl mcp --agent-key FILE`, "+
					"which signs its proposals, or signs its own POST /intents/{id}/proposal with RFC 9421 (docs/agents.md)", in.IntentID)
		}
		return nil, err
	}
	return &Proposed{IntentID: in.IntentID, Solution: in.Solution, Status: string(intentd.StateProcessing),
		Next: "call await_outcome with this intent_id for the decision"}, nil
}

func (s *Server) await(ctx context.Context, in awaitArgs) (*Outcome, error) {
	if err := checkID(in.IntentID); err != nil {
		return nil, err
	}
	wait := min(DefaultWait, s.opts.MaxWait)
	if in.TimeoutSeconds != 0 {
		wait = in.TimeoutSeconds.duration(s.opts.MaxWait)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	st, err := s.b.Await(wctx, in.IntentID)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		// The wait ended first: say where the intent is.
		if st, err = s.b.Status(ctx, in.IntentID); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	o, err := outcomeOf(st)
	if err != nil {
		return nil, err
	}
	// The status of an intent not yet decided carries no id (spec part 4); the answer
	// names the intent all the same, in its canonical form, as a decided one's does.
	o.IntentID, _ = intentd.CanonicalIntentID(in.IntentID)
	o.Decided = ptr(st.State.Terminal())
	if !st.State.Terminal() {
		o.Explanation = fmt.Sprintf("Not decided within %s: the intent is %s. Call await_outcome again.", wait, st.State)
	}
	return o, nil
}

func (s *Server) getProof(ctx context.Context, in intentArgs) (*ProofInfo, error) {
	if err := checkID(in.IntentID); err != nil {
		return nil, err
	}
	bundle, err := s.b.Proof(ctx, in.IntentID)
	if err != nil {
		return nil, err
	}
	out := &ProofInfo{IntentID: in.IntentID}
	if err := json.Unmarshal(bundle, &out.Bundle); err != nil {
		return nil, intentd.Internal("read proof bundle: %w", err)
	}
	pub, err := s.b.PublicKey(ctx)
	if err != nil {
		// Without a key to trust, the bundle is returned unverified rather than
		// checked against the key it carries itself, which would prove nothing.
		out.VerifyError = "the server's key could not be had: " + err.Error()
		return out, nil
	}
	report, err := proof.Verify(bundle, pub)
	if err != nil {
		out.VerifyError = err.Error()
		return out, nil
	}
	out.Verified, out.Outcome, out.KeyID, out.PublicKey = true, string(report.Outcome), report.KeyID, report.PublicKey
	return out, nil
}

// outcomeOf is the Outcome of a status, with an explanation an agent can act on.
func outcomeOf(st *client.IntentStatus) (*Outcome, error) {
	o := &Outcome{IntentID: st.IntentID, Status: string(st.State), FailureKind: string(st.FailureKind), EvidenceMissing: st.EvidenceMissing}
	if st.Proposal != nil {
		o.Solution = st.Proposal.Solution
	}
	if len(st.Evidence) > 0 {
		if err := json.Unmarshal(st.Evidence, &o.Evidence); err != nil {
			return nil, intentd.Internal("read evidence: %w", err)
		}
	}
	for _, f := range st.Failures {
		o.FailedConstraints = append(o.FailedConstraints, FailedConstraint{Index: f.Index, Expression: f.PrettyExpr, Reason: f.Reason})
	}
	switch st.State {
	case intentd.StateSuccess:
		o.Explanation = "The solution satisfies every constraint of the policy."
	case intentd.StateFailure:
		o.Explanation = failureExplanation(st.FailureKind) + " " + st.Reason
	case intentd.StateExpired:
		o.Explanation = "The intent expired without a proposal; nothing can be proposed to it any more."
	default:
		o.Explanation = "The intent is " + string(st.State) + "."
	}
	return o, nil
}

func failureExplanation(kind intentd.FailureKind) string {
	switch kind {
	case intentd.FailureConstraints:
		return "The solution breaks the policy:"
	case intentd.FailureEvidence:
		return "The evidence about the solution lacks what the policy reads, so it cannot pass:"
	case intentd.FailureExtraction:
		return "No evidence could be had about the solution (is it a solution the evidence layer knows?):"
	default:
		return "The service could not decide:"
	}
}
