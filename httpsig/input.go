package httpsig

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"slices"
	"strings"

	"github.com/dunglas/httpsfv"
	"github.com/mr-tron/base58"
)

// member is one member of an RFC 8941 dictionary as the sender wrote it: its key, the
// text of its value without the whitespace around it, and that text parsed. A bare
// member (a key with no "=", whose value is true) has only its parameters as text.
type member struct {
	key, value string
	bare       bool
	sig        sigParams
}

// splitDictionary cuts s, a dictionary header value, into its members' texts. It
// only has to find the commas between members: outside strings a comma ends a member,
// and inside one it does not. A string is "…" with backslash escapes, or a display
// string %"…" without them. It checks no more of the syntax than that: parseMembers
// parses each text it returns.
func splitDictionary(s string) ([]member, bool) {
	var out []member
	i, comma := 0, false
	for {
		// RFC 8941 drops spaces before a field value, and spaces and tabs around
		// the commas of a dictionary.
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' && comma) {
			i++
		}
		if i == len(s) {
			return out, !comma // RFC 8941 refuses a comma with nothing after it
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ',' && s[i] != ';' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		key := s[start:i]
		if key == "" {
			return nil, false
		}
		bare := i == len(s) || s[i] != '='
		if !bare {
			i++
		}
		vstart := i
		for i < len(s) && s[i] != ',' {
			if s[i] == '"' {
				display := i > 0 && s[i-1] == '%'
				i++
				for i < len(s) && s[i] != '"' {
					if s[i] == '\\' && !display {
						i++
					}
					i++
				}
				if i >= len(s) {
					return nil, false
				}
			}
			i++
		}
		out = append(out, member{key: key, value: strings.TrimRight(s[vstart:i], " \t"), bare: bare})
		comma = i < len(s)
		if comma {
			i++
		}
	}
}

// parseMembers parses s, a Signature-Input value, as an RFC 8941 dictionary, member
// by member, each from its own text: the text that a signature base carries is the
// text whose parse is checked, so the two cannot differ. Every member is parsed, so
// that a malformed one fails the whole header, as RFC 8941 requires; a label used
// twice fails it too, since two signatures under one label cannot be told apart.
func parseMembers(s string) ([]member, *Error) {
	const how = `write label=("@method" "@authority" "@path" "content-digest");created=…;expires=…;nonce="…";alg="ed25519";keyid="…"`
	members, ok := splitDictionary(s)
	if !ok {
		return nil, refuse(Malformed, "Signature-Input is not an RFC 8941 dictionary: its members cannot be told apart; %s", how)
	}
	seen := make(map[string]bool, len(members))
	for i := range members {
		m := &members[i]
		if seen[m.key] {
			return nil, refuse(Malformed, "Signature-Input names %q twice; give each signature its own label", m.key)
		}
		seen[m.key] = true
		if !m.bare {
			if sp, ok := readMember(m.key, m.value); ok {
				m.sig = sp
				continue
			}
		}
		text := m.key + "=" + m.value
		if m.bare {
			text = m.key + m.value
		}
		d, err := httpsfv.UnmarshalDictionary([]string{text})
		if err != nil {
			return nil, refuse(Malformed, "Signature-Input is not an RFC 8941 dictionary: member %q: %v; %s", m.key, err, how)
		}
		if names := d.Names(); len(names) != 1 || names[0] != m.key {
			return nil, refuse(Malformed, "Signature-Input is not an RFC 8941 dictionary: member %q cannot be read on its own; %s", m.key, how)
		}
		parsed, _ := d.Get(m.key)
		m.sig = fromHTTPSFV(parsed)
	}
	return members, nil
}

// input is one signature's Signature-Input member, read for checking.
type input struct {
	label      string
	raw        string   // the member's value as sent: the @signature-params value
	components []string // the covered component names, in order
	params     paramList
	keyID      string
	key        ed25519.PublicKey
}

// usable reads a parsed Signature-Input member and says whether Verify can check
// it: an inner list whose alg, if any, is ed25519 and whose keyid is a Base58 Ed25519
// public key. When it cannot, the error says why. A keyid that named the key of a
// signature that verified is not decoded again (keyIDs): an agent sends the same one
// with each request, and its Base58 decoding and canonical check cost 2 µs.
func usable(label string, sp *sigParams) (ed25519.PublicKey, string, *Error) {
	if !sp.list {
		return nil, "", refuse(Malformed, "signature %q: its Signature-Input member is not an inner list of components with parameters", label)
	}
	if v, ok := sp.params.Get("alg"); ok {
		alg, isString := v.(string)
		if !isString {
			return nil, "", refuse(Malformed, "signature %q: alg is not a string; write alg=\"ed25519\" or leave it out", label)
		}
		if alg != "ed25519" {
			return nil, "", refuse(Unsupported, "signature %q: alg %q is not supported; sign with Ed25519 and write alg=\"ed25519\"", label, alg)
		}
	}
	v, ok := sp.params.Get("keyid")
	if !ok {
		return nil, "", refuse(BadKey, "signature %q has no keyid; set keyid to the Base58 encoding of the 32-byte Ed25519 public key", label)
	}
	keyID, isString := v.(string)
	if !isString {
		return nil, "", refuse(BadKey, "signature %q: keyid is not a string; set keyid=\"<Base58 Ed25519 public key>\"", label)
	}
	if key, ok := keyIDs.get(keyID); ok {
		return ed25519.PublicKey(bytes.Clone(key)), keyID, nil // the caller's own, as decodeKey's
	}
	key, err := decodeKey(keyID)
	if err != "" {
		return nil, "", refuse(BadKey, "signature %q: keyid %q is not a Base58 Ed25519 public key: %s", label, keyID, err)
	}
	return key, keyID, nil
}

// decodeKey decodes a Base58 Ed25519 public key. It requires the canonical
// encoding, so that one key has one keyid, and bounds the length before decoding,
// since Base58 decoding is quadratic.
func decodeKey(s string) (ed25519.PublicKey, string) {
	if s == "" || len(s) > 44 {
		return nil, "it must be the Base58 encoding of 32 bytes (32 to 44 characters)"
	}
	b, err := base58.Decode(s)
	if err != nil {
		return nil, "it is not Base58"
	}
	if len(b) != ed25519.PublicKeySize {
		return nil, fmt.Sprintf("it decodes to %d bytes, not 32", len(b))
	}
	if base58.Encode(b) != s {
		return nil, "it is not the canonical Base58 encoding of its bytes"
	}
	return ed25519.PublicKey(b), ""
}

// selectInput picks, in Signature-Input order, the first signature Verify can check.
// When none can be checked, the error is the first label's.
func selectInput(values []string) (*input, *Error) {
	members, err := parseMembers(strings.Join(values, ", "))
	if err != nil {
		return nil, err
	}
	if len(members) == 0 {
		return nil, refuse(Missing, "the Signature-Input header is empty")
	}
	var first *Error
	for i := range members {
		m := &members[i]
		key, keyID, err := usable(m.key, &m.sig)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		label := m.key
		in := &input{label: label, raw: m.value, params: m.sig.params, keyID: keyID, key: key,
			components: make([]string, 0, len(m.sig.items))}
		for _, it := range m.sig.items {
			name, isString := it.value.(string)
			if !isString {
				return nil, refuse(Malformed, "signature %q: a covered component is not a string; write component names in double quotes", label)
			}
			if len(it.params) > 0 {
				return nil, refuse(Unsupported, "signature %q: component %q has parameters (;%s); component parameters are not supported, cover the plain component", label, name, strings.Join(it.params, ";"))
			}
			if err := checkName(label, name); err != nil {
				return nil, err
			}
			if slices.Contains(in.components, name) {
				return nil, refuse(Malformed, "signature %q covers %q twice", label, name)
			}
			in.components = append(in.components, name)
		}
		return in, nil
	}
	return nil, first
}

// checkName accepts a covered component name this package can derive: a derived
// component it knows, or a header field name in lower case (RFC 9421 section 2.1).
func checkName(label, name string) *Error {
	if strings.HasPrefix(name, "@") {
		switch {
		case derived[name]:
			return nil
		case name == "@signature-params":
			return refuse(Malformed, "signature %q covers \"@signature-params\", which is never a covered component", label)
		case name == "@status":
			return refuse(Unsupported, "signature %q covers \"@status\", which is for responses", label)
		}
		return refuse(Unsupported, "signature %q covers %q, a derived component not supported here; use @method, @authority, @path, @query, @scheme, @target-uri or @request-target", label, name)
	}
	if !isFieldName(name) {
		return refuse(Malformed, "signature %q covers %q, which is not a lower-case header field name", label, name)
	}
	return nil
}

// isFieldName reports whether s is an HTTP field name (a token, RFC 9110) in lower
// case, as RFC 9421 requires of covered header names.
func isFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
