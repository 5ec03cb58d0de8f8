package http

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/strictjson"
)

// DefaultMaxBodyBytes is the default limit on a request body (decisions.md, "Caller
// authentication and limits").
const DefaultMaxBodyBytes = 1 << 20

// requireContentType refuses a request whose Content-Type is not want. A charset
// parameter is allowed, and must be UTF-8: the bodies are read as UTF-8 and nothing
// else.
func requireContentType(r *http.Request, want string) error {
	header := r.Header.Get("Content-Type")
	if header == "" {
		return intentd.Errorf(intentd.KindInvalid, CodeUnsupportedContentType, "Content-Type: missing, want %s", want)
	}
	mt, params, err := mime.ParseMediaType(header)
	if err != nil {
		return intentd.Errorf(intentd.KindInvalid, CodeUnsupportedContentType, "Content-Type: %q does not parse: %v", header, err)
	}
	if mt != want {
		return intentd.Errorf(intentd.KindInvalid, CodeUnsupportedContentType, "Content-Type: %s, want %s", mt, want)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return intentd.Errorf(intentd.KindInvalid, CodeUnsupportedContentType, "Content-Type: charset %q, want utf-8", cs)
	}
	return nil
}

// readBody reads the whole body, refusing one over max bytes with a 413 as soon as the
// limit is passed (or at once when Content-Length already says so).
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	tooLarge := func() error {
		return intentd.Errorf(intentd.KindTooLarge, CodeBodyTooLarge, "the body is over the limit of %d bytes", max)
	}
	if r.ContentLength > max {
		return nil, tooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		return nil, intentd.Errorf(intentd.KindInvalid, CodeInvalidJSON, "the body could not be read: %v", err)
	}
	return body, nil
}

// maxBodyMembers bounds the members of the objects a body is read as: the body itself
// and, when it does not decode, its intent. A valid AuthoredIntent has two, a proposal
// one, an intent three; the bound leaves room for the superseded members a client of
// an earlier version sends and for a few stray fields, each named in its own message,
// and refuses at once a body of thousands of names. Their reading is linear in any
// case; the bound is what keeps a hostile body from costing more than a valid one.
const maxBodyMembers = 16

// members are the members of an object of a body, at most maxBodyMembers of them, so
// that looking one up by name is a short scan.
type members []strictjson.Member

// get is the value of the member name, or nil.
func (ms members) get(name string) jsontext.Value {
	for _, m := range ms {
		if m.Name == name {
			return m.Value
		}
	}
	return nil
}

// other is the name of the first member not among names, or "".
func (ms members) other(names ...string) string {
	for _, m := range ms {
		if !slices.Contains(names, m.Name) {
			return m.Name
		}
	}
	return ""
}

// bodyMembers reads the members of the object data, what names it in messages ("body"
// for the body itself), and refuses the members past maxBodyMembers with the shape
// the object should have.
func bodyMembers(data []byte, what, code, shape string) (members, error) {
	path := what
	if what == "body" {
		path = "" // the body's members are named alone: intent, authorship
	}
	var ms members
	err := strictjson.Members(data, path, maxBodyMembers, func(m strictjson.Member) error {
		ms = append(ms, m)
		return nil
	})
	var e *strictjson.Error
	if !errors.As(err, &e) {
		return ms, err
	}
	where := e.Path
	if where == "" {
		where = "body"
	}
	switch e.Fault {
	case strictjson.InvalidUTF8:
		return nil, intentd.Errorf(intentd.KindInvalid, CodeInvalidJSON, "the body is not valid UTF-8")
	case strictjson.LoneSurrogate:
		return nil, intentd.Errorf(intentd.KindInvalid, CodeInvalidJSON, "the body escapes a lone surrogate (%s)", e.Escape)
	case strictjson.NotObject:
		return nil, intentd.Errorf(intentd.KindUnprocessable, code, "%s: must be a JSON object, got a JSON %s", where, strictjson.KindName(e.Kind))
	case strictjson.Duplicate:
		return nil, intentd.Errorf(intentd.KindUnprocessable, code, "%s: duplicate key", where)
	case strictjson.TooMany:
		return nil, intentd.Errorf(intentd.KindUnprocessable, code, "%s: more than %d members (%s)", where, e.Limit, shape)
	}
	// Any other fault is of text that does not parse, named as a whole, with the spot
	// where it stops parsing.
	if where := syntaxPosition(data); where != "" {
		return nil, intentd.Errorf(intentd.KindInvalid, CodeInvalidJSON, "the body is not valid JSON: %s", where)
	}
	return nil, intentd.Errorf(intentd.KindInvalid, CodeInvalidJSON, "the body is not valid JSON")
}

// The superseded shapes of spec part 9, refused with a message that says where they
// come from and what replaced them.
const (
	supersededSignature = `"signature" beside "intent" is the signed-only submission shape of interface versions before 0.9.4; ` +
		`version 0.10.0 takes {"intent": ..., "authorship": {"Signed": <signature>}} or "authorship": "Unsigned"`
	supersededPayload = `{"payload", "signature"} naming a template_id is the submission shape of interface versions before 0.9.4, ` +
		`when policies were called templates; version 0.10.0 takes {"intent": {"id", "policy_id", "attrs"}, "authorship": ...}`
	supersededTemplateID = `template_id is what interface versions before 0.9.4 called the policy; version 0.10.0 takes policy_id`
	supersededMetadata   = `a proposal's metadata belongs to interface versions before 0.9.4; version 0.10.0 takes exactly {"solution": "..."}`
)

// DecodeAuthoredIntent decodes the body of POST /intents strictly: a JSON object with
// exactly the members "intent" (decoded by intentd.DecodeIntent, and returned raw as
// well, a slice of body, since the signature covers its canonical form) and
// "authorship" (decoded by crypto.DecodeAuthorship). Text that is not JSON is a KindInvalid error; everything
// else it refuses is KindUnprocessable with a message naming the field, including the
// superseded shapes of spec part 9, whose message says which versions used them.
func DecodeAuthoredIntent(body []byte) (in intentd.Intent, raw json.RawMessage, auth crypto.Authorship, err error) {
	ms, err := bodyMembers(body, "body", intentd.CodeInvalidIntent, `an AuthoredIntent has exactly "intent" and "authorship"`)
	if err != nil {
		return in, nil, auth, err
	}
	superseded := func(field, msg string) error {
		return intentd.Errorf(intentd.KindUnprocessable, CodeSupersededShape, "%s: %s", field, msg)
	}
	intent, rawAuth, unknown := ms.get("intent"), ms.get("authorship"), ms.other("intent", "authorship")
	switch {
	case ms.get("payload") != nil:
		return in, nil, auth, superseded("payload", supersededPayload)
	case ms.get("signature") != nil:
		return in, nil, auth, superseded("signature", supersededSignature)
	case unknown != "":
		return in, nil, auth, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidIntent,
			"%s: unknown field (an AuthoredIntent has exactly \"intent\" and \"authorship\")", unknown)
	case intent == nil:
		return in, nil, auth, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidIntent, "intent: missing")
	case rawAuth == nil:
		return in, nil, auth, intentd.Errorf(intentd.KindUnprocessable, CodeMalformedAuthorship, "authorship: missing")
	}
	// The intent is decoded before the authorship, whose errors come first, so that
	// a superseded intent is named as such whatever its authorship holds.
	in, inErr := intentd.DecodeIntent(intent)
	if inErr != nil {
		fields, err := bodyMembers(intent, "intent", intentd.CodeInvalidIntent, "an intent has id, policy_id and attrs")
		if err != nil {
			return in, nil, auth, err
		}
		if fields.get("template_id") != nil {
			return in, nil, auth, superseded("intent.template_id", supersededTemplateID)
		}
	}
	if auth, err = decodeAuthorship(rawAuth); err != nil {
		return in, nil, auth, err
	}
	if inErr != nil {
		return in, nil, auth, inErr
	}
	return in, json.RawMessage(intent), auth, nil
}

// DecodeProposal decodes the body of POST /intents/{id}/proposal strictly: exactly
// {"solution": string}. Text that is not JSON is KindInvalid; a missing, null or
// non-string solution, an unknown field (the superseded metadata among them) and a
// duplicate key are KindUnprocessable. Whether the solution is empty or too long is the
// engine's to say.
func DecodeProposal(body []byte) (intentd.Proposal, error) {
	ms, err := bodyMembers(body, "body", intentd.CodeInvalidProposal, `a proposal has exactly "solution"`)
	if err != nil {
		return intentd.Proposal{}, err
	}
	raw, unknown := ms.get("solution"), ms.other("solution")
	switch {
	case ms.get("metadata") != nil:
		return intentd.Proposal{}, intentd.Errorf(intentd.KindUnprocessable, CodeSupersededShape, "metadata: %s", supersededMetadata)
	case unknown != "":
		return intentd.Proposal{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidProposal,
			"%s: unknown field (a proposal has exactly \"solution\")", unknown)
	case raw == nil:
		return intentd.Proposal{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidProposal, "solution: missing")
	case raw.Kind() != '"':
		return intentd.Proposal{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidProposal,
			"solution: must be a string, got a JSON %s", strictjson.KindName(raw.Kind()))
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return intentd.Proposal{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidProposal, "solution: %v", err)
	}
	return intentd.Proposal{Solution: string(s)}, nil
}

// ParseLastEventID reads a last-event-id value: an integer from 0 to 2^63-1 written in
// decimal digits only (no sign, space, fraction or exponent). Anything else is a
// KindInvalid error.
func ParseLastEventID(s string) (uint64, error) {
	bad := func(why string) error {
		return intentd.Errorf(intentd.KindInvalid, CodeInvalidLastEventID, "last-event-id: %q %s, want an integer from 0 to 9223372036854775807", clip(s), why)
	}
	if s == "" {
		return 0, bad("is empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, bad("is not a non-negative integer")
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, bad("is out of range")
	}
	return uint64(n), nil
}

// clip shortens what a caller sent for quoting in a message.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// decodeAuthorship decodes the authorship member of a body, refused as
// malformed_authorship with the path of the value at fault.
func decodeAuthorship(raw []byte) (crypto.Authorship, error) {
	auth, err := crypto.DecodeAuthorship(raw)
	if err == nil {
		return auth, nil
	}
	var fe *crypto.FieldError
	if errors.As(err, &fe) {
		where := "authorship"
		if fe.Field != "" {
			where += "." + fe.Field
		}
		return auth, intentd.Errorf(intentd.KindUnprocessable, CodeMalformedAuthorship, "%s: %s", where, fe.Reason)
	}
	return auth, intentd.Errorf(intentd.KindUnprocessable, CodeMalformedAuthorship, "authorship: %v", err)
}
