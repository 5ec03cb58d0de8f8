package crypto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/intentd/intentd/internal/strictjson"
)

// Byte lengths the wire fixes for keys and signatures.
const (
	Ed25519PubKeyLen    = 32 // an Ed25519 public key
	Ed25519SignatureLen = 64 // an Ed25519 signature
	P256CompressedLen   = 33 // a SEC1 compressed P-256 point
	P256UncompressedLen = 65 // a SEC1 uncompressed P-256 point
	P256RawSignatureLen = 64 // an ECDSA P-256 signature as r||s

	// p256MinDERLen and p256MaxDERLen bound an ASN.1 DER ECDSA P-256 signature:
	// SEQUENCE of two INTEGERs of 1 to 33 bytes each.
	p256MinDERLen = 8
	p256MaxDERLen = 72
)

// maxSignatureDepth bounds how deeply Signature objects may nest through Multisig on
// the wire. Verify refuses any nesting at all; the decoder lets one level through so
// that the refusal is an authorship error, and stops deeper nesting at once so that a
// hostile body cannot make decoding deep or slow.
const maxSignatureDepth = 3

// maxJSONDepth bounds the nesting of the JSON the decoder reads into its tree. It is
// above anything maxSignatureDepth lets through, so it only ever stops hostile input.
const maxJSONDepth = 32

// Authorship is how an intent is authorized: Unsigned (Signature is nil) or Signed.
// On the wire it is the JSON string "Unsigned" or {"Signed": Signature}.
type Authorship struct {
	Signature *Signature

	// wire is the JSON the authorship was decoded from, when that JSON is exactly what
	// MarshalJSON writes for it (canonicalEd25519). An intent's authorship is written
	// into its stored form as it is taken in, and writing its Base58 again (time
	// quadratic in its length) cost 0.5 µs and four allocations alone, 1.6 µs of each
	// intent under intake's load (docs/benchmarks.md, "The twelfth pass"). A decoded
	// value is not changed afterwards; one built or changed in code has no wire and is
	// encoded.
	wire []byte
}

// Unsigned reports whether the authorship asserts nothing.
func (a Authorship) Unsigned() bool { return a.Signature == nil }

// Signature is exactly one of an Ed25519, a Passkey or a Multisig signature. On the
// wire it is a single-key object named after the set field.
type Signature struct {
	Ed25519  *Ed25519Signature
	Passkey  *PasskeySignature
	Multisig *MultisigSignature
}

// Ed25519Signature is an Ed25519 signature over JCS(intent).
// Wire: {"pub_key": Base58 of 32 bytes, "signature": Base58 of 64 bytes}.
type Ed25519Signature struct {
	PubKey    []byte
	Signature []byte
}

// PasskeySignature is a WebAuthn (ES256) assertion whose challenge is derived from
// JCS(intent). Wire: {"pub_key": Base58 of a 33- or 65-byte SEC1 P-256 point,
// "signature": Base58 of a DER or raw r||s ECDSA signature, "client_data": the client
// data JSON as a string, "authenticator_data": Base58 bytes}.
type PasskeySignature struct {
	PubKey            []byte
	Signature         []byte
	ClientData        string
	AuthenticatorData []byte
}

// MultisigSignature is a weighted threshold of Ed25519 and passkey signatures.
// Wire: {"pub_key": {"signers": {Base58 key: weight, ...}, "threshold": n},
// "signatures": [Signature, ...]}. Signers keeps the order of the wire object so that a
// decode and encode round trip gives the same bytes back.
type MultisigSignature struct {
	Signers    []Signer
	Threshold  uint64
	Signatures []Signature
}

// Signer is one entry of a multisig's signers: a public key (32 bytes: Ed25519; 33 or
// 65 bytes: P-256) and the weight its signature counts for.
type Signer struct {
	PubKey []byte
	Weight uint64
}

// DecodeAuthorship decodes the JSON of an Authorship value strictly. Every failure is a
// *FieldError. Unlike UnmarshalJSON, the value may keep data, to encode it again
// (Authorship.wire): data must not change while the value is used.
func DecodeAuthorship(data []byte) (Authorship, error) {
	root, err := parseTree(data)
	if err != nil {
		return Authorship{}, err
	}
	return decodeAuthorship(root)
}

// UnmarshalJSON decodes an Authorship strictly: unknown keys, missing fields, two keys
// in a one-of object, wrong JSON types, null, bad Base58 and wrong byte lengths are all
// refused with a *FieldError naming the field.
func (a *Authorship) UnmarshalJSON(data []byte) error {
	got, err := DecodeAuthorship(data)
	if err != nil {
		return err
	}
	// encoding/json's caller may reuse data once this returns.
	got.wire = bytes.Clone(got.wire)
	*a = got
	return nil
}

// UnmarshalJSON decodes a Signature strictly; field paths in its errors are relative to
// the Signature itself (for example "Ed25519.pub_key").
func (s *Signature) UnmarshalJSON(data []byte) error {
	root, err := parseTree(data)
	if err != nil {
		return err
	}
	got, err := decodeSignature(root, "", 1)
	if err != nil {
		return err
	}
	*s = got
	return nil
}

// MarshalJSON encodes the wire form: "Unsigned" or {"Signed": ...}.
func (a Authorship) MarshalJSON() ([]byte, error) {
	if a.Signature == nil {
		return []byte(`"Unsigned"`), nil
	}
	if a.wire != nil {
		return bytes.Clone(a.wire), nil
	}
	var buf bytes.Buffer
	// An Ed25519 authorship, the common one, is at most 184 bytes: one allocation
	// instead of a buffer grown three times.
	buf.Grow(184)
	buf.WriteString(`{"Signed":`)
	if err := a.Signature.encode(&buf); err != nil {
		return nil, err
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// MarshalJSON encodes the single-key wire object. A Signature with no field or more
// than one field set has no wire form and is an error.
func (s Signature) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := s.encode(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (s *Signature) encode(buf *bytes.Buffer) error {
	if n := s.count(); n != 1 {
		return fmt.Errorf("crypto: a Signature needs exactly one of Ed25519, Passkey, Multisig set, has %d", n)
	}
	switch {
	case s.Ed25519 != nil:
		buf.WriteString(`{"Ed25519":{"pub_key":`)
		writeBase58(buf, s.Ed25519.PubKey)
		buf.WriteString(`,"signature":`)
		writeBase58(buf, s.Ed25519.Signature)
		buf.WriteString(`}}`)
	case s.Passkey != nil:
		p := s.Passkey
		buf.WriteString(`{"Passkey":{"pub_key":`)
		writeBase58(buf, p.PubKey)
		buf.WriteString(`,"signature":`)
		writeBase58(buf, p.Signature)
		buf.WriteString(`,"client_data":`)
		cd, err := json.Marshal(p.ClientData)
		if err != nil {
			return err
		}
		buf.Write(cd)
		buf.WriteString(`,"authenticator_data":`)
		writeBase58(buf, p.AuthenticatorData)
		buf.WriteString(`}}`)
	default:
		m := s.Multisig
		buf.WriteString(`{"Multisig":{"pub_key":{"signers":{`)
		for i, sg := range m.Signers {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeBase58(buf, sg.PubKey)
			buf.WriteByte(':')
			buf.WriteString(strconv.FormatUint(sg.Weight, 10))
		}
		buf.WriteString(`},"threshold":`)
		buf.WriteString(strconv.FormatUint(m.Threshold, 10))
		buf.WriteString(`},"signatures":[`)
		for i := range m.Signatures {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := m.Signatures[i].encode(buf); err != nil {
				return err
			}
		}
		buf.WriteString(`]}}`)
	}
	return nil
}

func (s *Signature) count() int {
	n := 0
	if s.Ed25519 != nil {
		n++
	}
	if s.Passkey != nil {
		n++
	}
	if s.Multisig != nil {
		n++
	}
	return n
}

// writeBase58 writes b as a JSON string; the Base58 alphabet needs no escaping.
func writeBase58(buf *bytes.Buffer, b []byte) {
	buf.WriteByte('"')
	buf.WriteString(EncodeBase58(b))
	buf.WriteByte('"')
}

// The decoder reads the whole text once, which refuses text that is not JSON or is
// nested past maxJSONDepth, then walks it: at each object it reads only the members
// the wire allows, and goes down into their values in the order of the names it wants.
// Each level reads its part of the text again, and the wire has a handful of levels,
// so decoding stays linear in the input.

// maxWireSigners bounds the signers of a multisig on the wire (the other objects of
// the wire have fixed keys, and are read with a bound of one member more than they may
// hold, so that the member too many is named by the check that refuses it). It is
// four times the MaxMultisigSigners Verify allows, so that Verify still answers for a
// multisig that is merely too large, and a body of thousands of signers is refused
// before their keys are decoded.
const maxWireSigners = 4 * MaxMultisigSigners

// parseTree checks that data is one JSON value, nested no more than maxJSONDepth deep,
// and returns it for the walk.
func parseTree(data []byte) (jsontext.Value, error) {
	v, err := strictjson.ReadValue(data, maxJSONDepth)
	if err != nil {
		return nil, fieldError(err)
	}
	return v, nil
}

// fieldError words a refusal of the reader as a FieldError; any other error, the
// walk's own FieldErrors among them, is returned as it is.
func fieldError(err error) error {
	var e *strictjson.Error
	if !errors.As(err, &e) {
		return err
	}
	return &FieldError{Field: e.Path, Reason: e.Reason()}
}

// join is the path of member key of the object at path.
func join(path, key string) string { return strictjson.Join(path, key) }

// text is the value of a JSON string the reader has checked.
func text(v jsontext.Value) string {
	b, _ := jsontext.AppendUnquote(nil, v)
	return string(b)
}

func wrongType(field, want string, v jsontext.Value) error {
	if v.Kind() == 'n' {
		return &FieldError{Field: field, Reason: "must not be null, want " + want}
	}
	return &FieldError{Field: field, Reason: fmt.Sprintf("must be %s, got %s", want, strictjson.KindName(v.Kind()))}
}

// fields checks that v is an object whose keys are exactly the required ones, each
// once, and returns the values in the order of names.
func fields(v jsontext.Value, path string, names ...string) ([]jsontext.Value, error) {
	if v.Kind() != '{' {
		return nil, wrongType(path, "an object", v)
	}
	vals := make([]jsontext.Value, len(names))
	err := strictjson.Members(v, path, len(names)+1, func(m strictjson.Member) error {
		i := slices.Index(names, m.Name)
		if i < 0 {
			return &FieldError{Field: join(path, m.Name), Reason: "unknown field"}
		}
		vals[i] = m.Value
		return nil
	})
	if err != nil {
		return nil, fieldError(err)
	}
	for i, val := range vals {
		if val == nil {
			return nil, &FieldError{Field: join(path, names[i]), Reason: "missing"}
		}
	}
	return vals, nil
}

// oneOf checks that v is an object with exactly one key, one of names, and returns
// that key and its value.
func oneOf(v jsontext.Value, path string, names ...string) (string, jsontext.Value, error) {
	if v.Kind() != '{' {
		return "", nil, wrongType(path, "an object with one key of "+quoteList(names), v)
	}
	var key string
	var val jsontext.Value
	err := strictjson.Members(v, path, 2, func(m strictjson.Member) error {
		if !slices.Contains(names, m.Name) {
			return &FieldError{Field: join(path, m.Name), Reason: "unknown field, want one of " + quoteList(names)}
		}
		if val != nil {
			return &FieldError{Field: path, Reason: fmt.Sprintf("has both %q and %q, want exactly one of %s", key, m.Name, quoteList(names))}
		}
		key, val = m.Name, m.Value
		return nil
	})
	if err != nil {
		return "", nil, fieldError(err)
	}
	if val == nil {
		return "", nil, &FieldError{Field: path, Reason: "empty object, want exactly one of " + quoteList(names)}
	}
	return key, val, nil
}

func quoteList(names []string) string {
	var b bytes.Buffer
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}

func decodeAuthorship(v jsontext.Value) (Authorship, error) {
	switch v.Kind() {
	case '"':
		if s := text(v); s != "Unsigned" {
			return Authorship{}, &FieldError{Reason: fmt.Sprintf(`unknown authorship %q, want "Unsigned" or {"Signed": ...}`, s)}
		}
		return Authorship{}, nil
	case '{':
		_, signed, err := oneOf(v, "", "Signed")
		if err != nil {
			return Authorship{}, err
		}
		sig, err := decodeSignature(signed, "Signed", 1)
		if err != nil {
			return Authorship{}, err
		}
		a := Authorship{Signature: &sig}
		if sig.Ed25519 != nil && canonicalEd25519(v) {
			a.wire = v
		}
		return a, nil
	default:
		return Authorship{}, wrongType("", `"Unsigned" or {"Signed": ...}`, v)
	}
}

// canonicalEd25519 reports whether v, which decoded as an Ed25519 authorship, is
// spelled exactly as MarshalJSON writes one: the members in its order, no space, and
// the Base58 texts unescaped. Base58 is one-to-one (a text's leading 1s are its leading
// zero bytes, the rest a number written without leading zeros), so texts that decoded
// to the key and the signature are the texts their encoding gives, and v is their
// encoding.
func canonicalEd25519(v []byte) bool {
	rest, ok := bytes.CutPrefix(v, []byte(`{"Signed":{"Ed25519":{"pub_key":"`))
	if !ok {
		return false
	}
	if rest, ok = skipBase58(rest); !ok {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`","signature":"`)); !ok {
		return false
	}
	if rest, ok = skipBase58(rest); !ok {
		return false
	}
	return string(rest) == `"}}}`
}

// skipBase58 skips the Base58 letters at the start of b; ok is false when there are
// none.
func skipBase58(b []byte) (rest []byte, ok bool) {
	i := 0
	for i < len(b) && isBase58Letter(b[i]) {
		i++
	}
	return b[i:], i > 0
}

// isBase58Letter reports whether c is in the Bitcoin alphabet: the digits and letters
// but 0, O, I and l.
func isBase58Letter(c byte) bool {
	switch {
	case c >= '1' && c <= '9':
		return true
	case c >= 'A' && c <= 'Z':
		return c != 'I' && c != 'O'
	case c >= 'a' && c <= 'z':
		return c != 'l'
	}
	return false
}

func decodeSignature(n jsontext.Value, path string, depth int) (Signature, error) {
	key, v, err := oneOf(n, path, "Ed25519", "Passkey", "Multisig")
	if err != nil {
		return Signature{}, err
	}
	path = join(path, key)
	switch key {
	case "Ed25519":
		vals, err := fields(v, path, "pub_key", "signature")
		if err != nil {
			return Signature{}, err
		}
		pub, err := bytesField(vals[0], join(path, "pub_key"), Ed25519PubKeyLen)
		if err != nil {
			return Signature{}, err
		}
		sig, err := bytesField(vals[1], join(path, "signature"), Ed25519SignatureLen)
		if err != nil {
			return Signature{}, err
		}
		return Signature{Ed25519: &Ed25519Signature{PubKey: pub, Signature: sig}}, nil
	case "Passkey":
		vals, err := fields(v, path, "pub_key", "signature", "client_data", "authenticator_data")
		if err != nil {
			return Signature{}, err
		}
		pub, err := bytesField(vals[0], join(path, "pub_key"), P256CompressedLen, P256UncompressedLen)
		if err != nil {
			return Signature{}, err
		}
		sig, err := bytesField(vals[1], join(path, "signature"))
		if err != nil {
			return Signature{}, err
		}
		if len(sig) < p256MinDERLen || len(sig) > p256MaxDERLen {
			return Signature{}, &FieldError{Field: join(path, "signature"), Reason: fmt.Sprintf(
				"decodes to %d bytes, want 64 (r||s) or an ASN.1 DER signature of %d to %d", len(sig), p256MinDERLen, p256MaxDERLen)}
		}
		if vals[2].Kind() != '"' {
			return Signature{}, wrongType(join(path, "client_data"), "a string", vals[2])
		}
		authData, err := bytesField(vals[3], join(path, "authenticator_data"))
		if err != nil {
			return Signature{}, err
		}
		return Signature{Passkey: &PasskeySignature{
			PubKey: pub, Signature: sig, ClientData: text(vals[2]), AuthenticatorData: authData,
		}}, nil
	default:
		if depth >= maxSignatureDepth {
			return Signature{}, &FieldError{Field: path, Reason: fmt.Sprintf("signatures nested more than %d deep", maxSignatureDepth)}
		}
		vals, err := fields(v, path, "pub_key", "signatures")
		if err != nil {
			return Signature{}, err
		}
		pkPath := join(path, "pub_key")
		pk, err := fields(vals[0], pkPath, "signers", "threshold")
		if err != nil {
			return Signature{}, err
		}
		signers, err := decodeSigners(pk[0], join(pkPath, "signers"))
		if err != nil {
			return Signature{}, err
		}
		threshold, err := uintField(pk[1], join(pkPath, "threshold"))
		if err != nil {
			return Signature{}, err
		}
		sigsPath := join(path, "signatures")
		if vals[1].Kind() != '[' {
			return Signature{}, wrongType(sigsPath, "an array of signatures", vals[1])
		}
		sigs := []Signature{}
		err = strictjson.Elements(vals[1], sigsPath, func(i int, el jsontext.Value) error {
			s, err := decodeSignature(el, strictjson.Index(sigsPath, i), depth+1)
			if err != nil {
				return err
			}
			sigs = append(sigs, s)
			return nil
		})
		if err != nil {
			return Signature{}, fieldError(err)
		}
		return Signature{Multisig: &MultisigSignature{Signers: signers, Threshold: threshold, Signatures: sigs}}, nil
	}
}

func decodeSigners(v jsontext.Value, path string) ([]Signer, error) {
	if v.Kind() != '{' {
		return nil, wrongType(path, "an object of Base58 public key to weight", v)
	}
	signers := []Signer{}
	err := strictjson.Members(v, path, maxWireSigners, func(m strictjson.Member) error {
		field := join(path, m.Name)
		pub, err := decodeKey(m.Name, Ed25519PubKeyLen, P256CompressedLen, P256UncompressedLen)
		if err != nil {
			return &FieldError{Field: field, Reason: "key " + err.Error()}
		}
		w, err := uintField(m.Value, field)
		if err != nil {
			return err
		}
		signers = append(signers, Signer{PubKey: pub, Weight: w})
		return nil
	})
	if e := (*strictjson.Error)(nil); errors.As(err, &e) && e.Fault == strictjson.TooMany {
		return nil, &FieldError{Field: path, Reason: fmt.Sprintf(
			"more than %d signers, and a multisig may have at most %d", maxWireSigners, MaxMultisigSigners)}
	}
	if err != nil {
		return nil, fieldError(err)
	}
	return signers, nil
}

// bytesField decodes a Base58 string field; when lengths are given, the decoded bytes
// must have one of them.
func bytesField(v jsontext.Value, field string, lengths ...int) ([]byte, error) {
	if v.Kind() != '"' {
		return nil, wrongType(field, "a Base58 string", v)
	}
	b, err := decodeKey(text(v), lengths...)
	if err != nil {
		return nil, &FieldError{Field: field, Reason: err.Error()}
	}
	return b, nil
}

// maxVariableBytes bounds the Base58 values whose length the wire does not fix
// (authenticator data, DER signatures). An assertion's authenticator data is 37 bytes
// plus any extensions; a DER signature is at most 72.
const maxVariableBytes = 1024

// maxBase58Len is the longest Base58 text of n bytes: about 1.37 characters a byte,
// and one '1' for each leading zero byte, so never more than 1.37n+1.
func maxBase58Len(n int) int { return n*137/100 + 2 }

// decodeKey decodes Base58 and checks the decoded length against lengths (at most
// maxVariableBytes when none are given). The text's length is checked first: Base58
// decoding takes time quadratic in the length, so a megabyte of it would hold a core
// for seconds.
func decodeKey(s string, lengths ...int) ([]byte, error) {
	longest := maxVariableBytes
	if len(lengths) > 0 {
		longest = slices.Max(lengths)
	}
	if len(s) > maxBase58Len(longest) {
		if len(lengths) == 0 {
			return nil, fmt.Errorf("%d characters of Base58 is too long, want at most %d bytes", len(s), longest)
		}
		return nil, fmt.Errorf("%d characters of Base58 is too long, want %s bytes", len(s), wantLengths(lengths))
	}
	b, err := DecodeBase58(s)
	if err != nil {
		return nil, err
	}
	if len(lengths) == 0 {
		if len(b) > maxVariableBytes {
			return nil, fmt.Errorf("decodes to %d bytes, more than the %d allowed", len(b), maxVariableBytes)
		}
		return b, nil
	}
	for _, l := range lengths {
		if len(b) == l {
			return b, nil
		}
	}
	return nil, fmt.Errorf("decodes to %d bytes, want %s", len(b), wantLengths(lengths))
}

// wantLengths writes lengths as "32", "33 or 65", "32, 33 or 65".
func wantLengths(lengths []int) string {
	want := strconv.Itoa(lengths[0])
	for i, l := range lengths[1:] {
		if i == len(lengths)-2 {
			want += " or "
		} else {
			want += ", "
		}
		want += strconv.Itoa(l)
	}
	return want
}

// uintField reads a non-negative integer written plainly (no sign, fraction or
// exponent), so that the value re-encodes to the same text.
func uintField(v jsontext.Value, field string) (uint64, error) {
	if v.Kind() != '0' {
		return 0, wrongType(field, "a non-negative integer", v)
	}
	lit := string(v)
	n, err := strconv.ParseUint(lit, 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, &FieldError{Field: field, Reason: fmt.Sprintf("%s is above 18446744073709551615, the largest u64", lit)}
		}
		return 0, &FieldError{Field: field, Reason: fmt.Sprintf("%s is not a non-negative integer without fraction or exponent", lit)}
	}
	return n, nil
}

// noDuplicateKeys refuses a value, at any depth, that names one key twice. The value
// was read whole by parseTree, so nothing else can be at fault in it; its objects are
// bounded by the body it came in rather than by a count of members.
func noDuplicateKeys(v jsontext.Value, path string) error {
	d := strictjson.NewDecoder(v)
	defer d.Release()
	return fieldError(uniqueNames(d, path))
}

func uniqueNames(d *strictjson.Decoder, path string) error {
	switch d.PeekKind() {
	case '{':
		return d.Object(path, math.MaxInt, func(name string) error { return uniqueNames(d, join(path, name)) })
	case '[':
		return d.Array(path, func(i int) error { return uniqueNames(d, strictjson.Index(path, i)) })
	}
	_, err := d.Token(path)
	return err
}
