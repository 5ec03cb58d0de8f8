package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
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

// member is one key and raw value of a JSON object, in the order of the text.
type member struct {
	key string
	val json.RawMessage
}

// objectMembers returns the members of the JSON object data, which must be valid JSON.
// A value that is not an object, and a key given twice, are unprocessable; what names
// the object in messages.
func objectMembers(data []byte, what, code string) ([]member, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		got := "a JSON " + jsonKind(trimmed)
		return nil, intentd.Errorf(intentd.KindUnprocessable, code, "%s: must be a JSON object, got %s", what, got)
	}
	dec := memberDecoders.Get().(*jsontext.Decoder)
	defer memberDecoders.Put(dec)
	// From a bytes.Buffer jsontext reads in place; a repeated key is let through to be
	// named below.
	dec.Reset(bytes.NewBuffer(trimmed), jsontext.AllowDuplicateNames(true))
	defer dec.Reset(emptyInput)
	if _, err := dec.ReadToken(); err != nil {
		return nil, invalidJSON(what, err)
	}
	var out []member
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, invalidJSON(what, err)
		}
		key := tok.String() // before the next read, which voids tok
		val, err := dec.ReadValue()
		if err != nil {
			return nil, invalidJSON(join(what, key), err)
		}
		for _, m := range out {
			if m.key == key {
				return nil, intentd.Errorf(intentd.KindUnprocessable, code, "%s: duplicate key", join(what, key))
			}
		}
		out = append(out, member{key, json.RawMessage(val.Clone())})
	}
	return out, nil
}

// memberDecoders keeps jsontext decoders from one request to the next: every intent and
// proposal body is read with one.
var memberDecoders = sync.Pool{New: func() any { return new(jsontext.Decoder) }}

// emptyInput is what a pooled decoder is left reading, so that it holds on to no body.
var emptyInput = bytes.NewReader(nil)

func invalidJSON(where string, err error) error {
	return intentd.Errorf(intentd.KindInvalid, CodeInvalidJSON, "%s: %s", where, strings.TrimPrefix(err.Error(), "jsontext: "))
}

// join builds a field path for messages; the body itself has the empty path.
func join(path, key string) string {
	if key == "" {
		return path
	}
	if path == "" || path == "body" {
		return key
	}
	return path + "." + key
}

// jsonKind names the kind of a valid JSON value from its first byte.
func jsonKind(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

func lookup(ms []member, key string) (json.RawMessage, bool) {
	for _, m := range ms {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
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
// well, since the signature covers its canonical form) and "authorship" (decoded by
// crypto.DecodeAuthorship). Text that is not JSON is a KindInvalid error; everything
// else it refuses is KindUnprocessable with a message naming the field, including the
// superseded shapes of spec part 9, whose message says which versions used them.
func DecodeAuthoredIntent(body []byte) (in intentd.Intent, raw json.RawMessage, auth crypto.Authorship, err error) {
	if err := validJSON(body); err != nil {
		return in, nil, auth, err
	}
	ms, err := objectMembers(body, "body", intentd.CodeInvalidIntent)
	if err != nil {
		return in, nil, auth, err
	}
	superseded := func(field, msg string) error {
		return intentd.Errorf(intentd.KindUnprocessable, CodeSupersededShape, "%s: %s", field, msg)
	}
	if _, ok := lookup(ms, "payload"); ok {
		return in, nil, auth, superseded("payload", supersededPayload)
	}
	if _, ok := lookup(ms, "signature"); ok {
		return in, nil, auth, superseded("signature", supersededSignature)
	}
	for _, m := range ms {
		if m.key != "intent" && m.key != "authorship" {
			return in, nil, auth, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidIntent,
				"%s: unknown field (an AuthoredIntent has exactly \"intent\" and \"authorship\")", m.key)
		}
	}
	intent, ok := lookup(ms, "intent")
	if !ok {
		return in, nil, auth, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidIntent, "intent: missing")
	}
	rawAuth, ok := lookup(ms, "authorship")
	if !ok {
		return in, nil, auth, intentd.Errorf(intentd.KindUnprocessable, CodeMalformedAuthorship, "authorship: missing")
	}
	// The intent is decoded before the authorship, whose errors come first, so that
	// a superseded intent is named as such whatever its authorship holds.
	in, inErr := intentd.DecodeIntent(intent)
	if inErr != nil {
		if fields, err := objectMembers(intent, "intent", intentd.CodeInvalidIntent); err != nil {
			return in, nil, auth, err
		} else if _, ok := lookup(fields, "template_id"); ok {
			return in, nil, auth, superseded("intent.template_id", supersededTemplateID)
		}
	}
	auth, err = crypto.DecodeAuthorship(rawAuth)
	if err != nil {
		var fe *crypto.FieldError
		if errors.As(err, &fe) {
			return in, nil, auth, intentd.Errorf(intentd.KindUnprocessable, CodeMalformedAuthorship, "%s: %s", join("authorship", fe.Field), fe.Reason)
		}
		return in, nil, auth, intentd.Errorf(intentd.KindUnprocessable, CodeMalformedAuthorship, "authorship: %v", err)
	}
	if inErr != nil {
		return in, nil, auth, inErr
	}
	return in, intent, auth, nil
}

// DecodeProposal decodes the body of POST /intents/{id}/proposal strictly: exactly
// {"solution": string}. Text that is not JSON is KindInvalid; a missing, null or
// non-string solution, an unknown field (the superseded metadata among them) and a
// duplicate key are KindUnprocessable. Whether the solution is empty or too long is the
// engine's to say.
func DecodeProposal(body []byte) (intentd.Proposal, error) {
	if err := validJSON(body); err != nil {
		return intentd.Proposal{}, err
	}
	ms, err := objectMembers(body, "body", intentd.CodeInvalidProposal)
	if err != nil {
		return intentd.Proposal{}, err
	}
	if _, ok := lookup(ms, "metadata"); ok {
		return intentd.Proposal{}, intentd.Errorf(intentd.KindUnprocessable, CodeSupersededShape, "metadata: %s", supersededMetadata)
	}
	for _, m := range ms {
		if m.key != "solution" {
			return intentd.Proposal{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidProposal,
				"%s: unknown field (a proposal has exactly \"solution\")", m.key)
		}
	}
	raw, ok := lookup(ms, "solution")
	if !ok {
		return intentd.Proposal{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidProposal, "solution: missing")
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return intentd.Proposal{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidProposal, "solution: must be a string, got a JSON %s", jsonKind(raw))
	}
	var p intentd.Proposal
	if err := json.Unmarshal(raw, &p.Solution); err != nil {
		return intentd.Proposal{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidProposal, "solution: %v", err)
	}
	return p, nil
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

// validJSON refuses, as not JSON, text that json.Valid lets through but RFC 8259 does
// not: bytes that are not UTF-8, and \u escapes of lone surrogates. encoding/json would
// quietly turn either into U+FFFD, so the value stored or signed would not be the one
// sent.
func validJSON(body []byte) error {
	if !json.Valid(body) {
		return intentd.Errorf(intentd.KindInvalid, CodeInvalidJSON, "the body is not valid JSON")
	}
	if !utf8.Valid(body) {
		return intentd.Errorf(intentd.KindInvalid, CodeInvalidJSON, "the body is not valid UTF-8")
	}
	// In valid JSON a backslash only ever starts an escape inside a string.
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if body[i+1] != 'u' {
			i++
			continue
		}
		r := hex4(body[i+2 : i+6])
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00:
			if i+12 > len(body) || body[i+6] != '\\' || body[i+7] != 'u' || !isLowSurrogate(hex4(body[i+8:i+12])) {
				return intentd.Errorf(intentd.KindInvalid, CodeInvalidJSON, "the body escapes a lone surrogate (\\u%s)", body[i+2:i+6])
			}
			i += 11
		case isLowSurrogate(r):
			return intentd.Errorf(intentd.KindInvalid, CodeInvalidJSON, "the body escapes a lone surrogate (\\u%s)", body[i+2:i+6])
		default:
			i += 5
		}
	}
	return nil
}

func isLowSurrogate(r rune) bool { return r >= 0xdc00 && r <= 0xdfff }

// hex4 reads four hexadecimal digits, which valid JSON guarantees after \u.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}
