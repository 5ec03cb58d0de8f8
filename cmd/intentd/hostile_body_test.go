package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
	intenthttp "github.com/intentd/intentd/http"
)

// bodyCases: what is wrong is the body as a whole, on every endpoint that takes one.
func (f *hostileFixture) bodyCases() []hostileCase {
	valid := f.signed(f.intent(uuid.NewString(), hostileAttrs))
	cs := []hostileCase{
		hostilePost("empty body", []byte{}, 400, "invalid_json"),
		hostilePost("whitespace only", []byte(" \n\t "), 400, "invalid_json"),
		hostilePost("not JSON", []byte(`intent=1&authorship=Unsigned`), 400, "invalid_json"),
		hostilePost("single quotes", []byte(`{'intent':{},'authorship':'Unsigned'}`), 400, "invalid_json"),
		hostilePost("trailing comma", []byte(`{"intent":{},"authorship":"Unsigned",}`), 400, "invalid_json"),
		hostilePost("comment", []byte(`{"intent":{} /* x */,"authorship":"Unsigned"}`), 400, "invalid_json"),
		hostilePost("two values", append(append([]byte{}, valid...), valid...), 400, "invalid_json"),
		hostilePost("trailing garbage", append(append([]byte{}, valid...), 'x'), 400, "invalid_json"),
		hostilePost("NaN", []byte(`{"intent":NaN,"authorship":"Unsigned"}`), 400, "invalid_json"),
		hostilePost("hex number", []byte(`{"intent":0x10,"authorship":"Unsigned"}`), 400, "invalid_json"),
		hostilePost("unescaped control byte", []byte("{\"intent\":{},\"authorship\":\"Uns\x01igned\"}"), 400, "invalid_json"),
		hostilePost("raw NUL byte", []byte("{\"intent\":{},\"authorship\":\"Unsigned\"}\x00"), 400, "invalid_json"),
		hostilePost("byte order mark", append([]byte("\xef\xbb\xbf"), valid...), 400, "invalid_json"),
		hostilePost("UTF-16 body", hostileUTF16(string(valid)), 400, "invalid_json"),
		hostilePost("bad escape", []byte(`{"intent":{},"authorship":"\x41"}`), 400, "invalid_json"),
		hostilePost("short unicode escape", []byte(`{"intent":{},"authorship":"\u12"}`), 400, "invalid_json"),
		hostilePost("nested 100000 arrays", []byte(strings.Repeat("[", 100000)+strings.Repeat("]", 100000)), 400, "invalid_json"),
		hostilePost("body is null", []byte(`null`), 422, "invalid_intent"),
		hostilePost("body is an array", []byte(`[{"intent":{},"authorship":"Unsigned"}]`), 422, "invalid_intent"),
		hostilePost("body is a string", []byte(`"Unsigned"`), 422, "invalid_intent"),
		hostilePost("body is a number", []byte(`1e999`), 422, "invalid_intent"),
		hostilePost("body is true", []byte(`true`), 422, "invalid_intent"),
		hostilePost("over the body limit", hostilePad(valid, hostileMaxBody+1), 413, "body_too_large"),
		{name: "intents/over the body limit, chunked", method: "POST", path: "/intents", ctype: hostileJSON, body: hostilePad(valid, hostileMaxBody+1), chunked: true, status: 413, code: "body_too_large"},
		// Every prefix of a valid body is refused as not JSON, never half stored.
	}
	for _, n := range []int{1, 2, 10, len(valid) / 4, len(valid) / 2, len(valid) - 2, len(valid) - 1} {
		cs = append(cs, hostilePost(fmt.Sprintf("truncated to %d bytes", n), valid[:n], 400, "invalid_json"))
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/jsonx", "application/json-patch+json",
		"application/json; charset=latin1", "application/json; charset=utf-16", "application/json; charset", "json", "*/*", "application/"} {
		c := hostilePost("content type "+ct, valid, 400, "unsupported_content_type")
		c.ctype = ct
		cs = append(cs, c)
	}
	cs = append(cs, hostileCase{name: "intents/no content type", method: "POST", path: "/intents", body: valid, status: 400, code: "unsupported_content_type"})
	return cs
}

// padJSON pads a JSON body with spaces to n bytes: still valid, only too long.
func hostilePad(b []byte, n int) []byte {
	return append(bytes.Repeat([]byte{' '}, n-len(b)), b...)
}

func hostileUTF16(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return b
}

// intentCases: the AuthoredIntent and intent objects, field by field.
func (f *hostileFixture) intentCases() []hostileCase {
	id := uuid.NewString()
	in := f.intent(id, hostileAttrs)
	sig := `{"Signed":` + hostileEdSig(f.keys[0], hostileCanon(in)) + `}`
	withIntent := func(intent string) []byte { return hostileBody([]byte(intent), sig) }
	pid := f.s.policy
	return []hostileCase{
		hostilePost("empty object", []byte(`{}`), 422, "invalid_intent"),
		hostilePost("missing intent", []byte(`{"authorship":`+sig+`}`), 422, "invalid_intent"),
		hostilePost("missing authorship", []byte(`{"intent":`+string(in)+`}`), 422, "malformed_authorship"),
		hostilePost("unknown member", []byte(`{"intent":`+string(in)+`,"authorship":`+sig+`,"ttl":5}`), 422, "invalid_intent"),
		hostilePost("duplicate intent", []byte(`{"intent":`+string(in)+`,"intent":`+string(in)+`,"authorship":`+sig+`}`), 422, "invalid_intent"),
		hostilePost("duplicate through an escape", []byte(`{"intent":`+string(in)+`,"\u0069ntent":`+string(in)+`,"authorship":`+sig+`}`), 422, "invalid_intent"),
		hostilePost("intent null", withIntent(`null`), 422, "invalid_intent"),
		hostilePost("intent array", withIntent(`[]`), 422, "invalid_intent"),
		hostilePost("intent string", withIntent(`"`+id+`"`), 422, "invalid_intent"),
		hostilePost("intent empty object", withIntent(`{}`), 422, "invalid_intent"),
		hostilePost("intent unknown field", withIntent(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":%s,"expires":1}`, id, pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("intent duplicate id", withIntent(fmt.Sprintf(`{"id":%q,"id":%q,"policy_id":%q,"attrs":%s}`, id, uuid.NewString(), pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id missing", withIntent(fmt.Sprintf(`{"policy_id":%q,"attrs":%s}`, pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id null", withIntent(fmt.Sprintf(`{"id":null,"policy_id":%q,"attrs":%s}`, pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id number", withIntent(fmt.Sprintf(`{"id":12345,"policy_id":%q,"attrs":%s}`, pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id object", withIntent(fmt.Sprintf(`{"id":{"uuid":%q},"policy_id":%q,"attrs":%s}`, id, pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id not a UUID", f.signed(f.intent("not-a-uuid", hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id empty", f.signed(f.intent("", hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id without hyphens", f.signed(f.intent(strings.ReplaceAll(uuid.NewString(), "-", ""), hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id in braces", f.signed(f.intent("{"+uuid.NewString()+"}", hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id as URN", f.signed(f.intent("urn:uuid:"+uuid.NewString(), hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id one short", f.signed(f.intent(uuid.NewString()[:35], hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id with a trailing space", f.signed(f.intent(uuid.NewString()+" ", hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id with a non-hex digit", f.signed(f.intent("g"+uuid.NewString()[1:], hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id with fullwidth digits", f.signed(f.intent("０"+uuid.NewString()[3:], hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id with NUL", f.signed(f.intent(`\u0000`+uuid.NewString()[1:], hostileAttrs)), 422, "invalid_intent"),
		hostilePost("policy_id missing", withIntent(fmt.Sprintf(`{"id":%q,"attrs":%s}`, id, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("policy_id number", withIntent(fmt.Sprintf(`{"id":%q,"policy_id":1,"attrs":%s}`, id, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("policy_id bad Base58", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":"0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl","attrs":%s}`, uuid.NewString(), hostileAttrs))), 422, "invalid_intent"),
		hostilePost("policy_id 31 bytes", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":%s}`, uuid.NewString(), crypto.EncodeBase58(bytes.Repeat([]byte{7}, 31)), hostileAttrs))), 422, "invalid_intent"),
		hostilePost("policy_id 33 bytes", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":%s}`, uuid.NewString(), "1"+pid, hostileAttrs))), 422, "invalid_intent"),
		hostilePost("policy_id hex", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":%s}`, uuid.NewString(), strings.Repeat("ab", 32), hostileAttrs))), 422, "invalid_intent"),
		hostilePost("policy_id unknown", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":%s}`, uuid.NewString(), hostileNoPolicy, hostileAttrs))), 400, "policy_not_found"),
		hostilePost("attrs null", withIntent(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":null}`, id, pid)), 422, "invalid_intent"),
		hostilePost("id taken", f.signed(f.intent(f.open, hostileAttrs)), 409, "intent_exists"),
		hostilePost("id taken in upper case", f.signed(f.intent(strings.ToUpper(f.open), hostileAttrs)), 409, "intent_exists"),
		hostilePost("id of a decided intent", f.signed(f.intent(f.decided, hostileAttrs)), 409, "intent_exists"),
		hostilePost("unsigned not permitted", hostileBody(f.intent(uuid.NewString(), hostileAttrs), `"Unsigned"`), 400, "unsigned_not_permitted"),
		// Superseded shapes of spec part 9.
		hostilePost("superseded intent and signature", []byte(`{"intent":`+string(in)+`,"signature":`+hostileEdSig(f.keys[0], hostileCanon(in))+`}`), 422, "superseded_shape"),
		hostilePost("superseded payload and signature", []byte(fmt.Sprintf(`{"payload":{"id":%q,"template_id":%q},"signature":%s}`, id, pid, hostileEdSig(f.keys[0], []byte("x")))), 422, "superseded_shape"),
		hostilePost("superseded payload alone", []byte(fmt.Sprintf(`{"payload":{"id":%q,"template_id":%q}}`, id, pid)), 422, "superseded_shape"),
		hostilePost("superseded template_id", withIntent(fmt.Sprintf(`{"id":%q,"template_id":%q,"attrs":%s}`, id, pid, hostileAttrs)), 422, "superseded_shape"),
		hostilePost("superseded signature beside authorship", []byte(`{"intent":`+string(in)+`,"authorship":`+sig+`,"signature":`+hostileEdSig(f.keys[0], hostileCanon(in))+`}`), 422, "superseded_shape"),
	}
}

// attrsCases: the attribute values, their types and limits.
func (f *hostileFixture) attrsCases() []hostileCase {
	attrs := func(size, colors, price string) string {
		return fmt.Sprintf(`{"fields":{"size":%s,"colors":%s,"max_price_cents":%s}}`, size, colors, price)
	}
	const size, colors, price = `{"String":"M"}`, `{"Set":{"String":["navy","white"]}}`, `{"Int":3000}`
	withPrice := func(p string) []byte { return f.signedAttrs(attrs(size, colors, p)) }
	withSize := func(sz string) []byte { return f.signedAttrs(attrs(sz, colors, price)) }
	withColors := func(c string) []byte { return f.signedAttrs(attrs(size, c, price)) }
	manyFields := make([]string, 0, 129)
	for i := range 129 {
		manyFields = append(manyFields, fmt.Sprintf(`"f%d":{"Int":%d}`, i, i))
	}
	bigSet := make([]string, 1025)
	for i := range bigSet {
		bigSet[i] = fmt.Sprintf(`"c%d"`, i)
	}
	return []hostileCase{
		hostilePost("attrs not an object", f.signedAttrs(`"size=M"`), 422, "invalid_intent"),
		hostilePost("attrs without fields", f.signedAttrs(`{}`), 422, "invalid_intent"),
		hostilePost("attrs fields null", f.signedAttrs(`{"fields":null}`), 422, "invalid_intent"),
		hostilePost("attrs fields array", f.signedAttrs(`{"fields":[]}`), 422, "invalid_intent"),
		hostilePost("attrs unknown key", f.signedAttrs(`{"fields":{},"extra":{}}`), 422, "invalid_intent"),
		hostilePost("attrs duplicate field", f.signedAttrs(`{"fields":{"size":{"String":"M"},"size":{"String":"L"},"colors":`+colors+`,"max_price_cents":`+price+`}}`), 422, "invalid_intent"),
		hostilePost("Int as a string", withPrice(`{"Int":"3000"}`), 422, "invalid_intent"),
		hostilePost("Int with a fraction", withPrice(`{"Int":3000.5}`), 422, "invalid_intent"),
		hostilePost("Int written 3000.0", withPrice(`{"Int":3000.0}`), 422, "invalid_intent"),
		hostilePost("Int with an exponent", withPrice(`{"Int":3e3}`), 422, "invalid_intent"),
		hostilePost("Int 1e400", withPrice(`{"Int":1e400}`), 422, "invalid_intent"),
		hostilePost("Int above int64", withPrice(`{"Int":9223372036854775808}`), 422, "invalid_intent"),
		hostilePost("Int below int64", withPrice(`{"Int":-9223372036854775809}`), 422, "invalid_intent"),
		hostilePost("Int of 400 digits", withPrice(`{"Int":`+strings.Repeat("9", 400)+`}`), 422, "invalid_intent"),
		hostilePost("Int beyond 2^53", withPrice(`{"Int":9007199254740993}`), 422, "invalid_intent"),
		hostilePost("Int below -2^53", withPrice(`{"Int":-9007199254740993}`), 422, "invalid_intent"),
		hostilePost("Int null", withPrice(`{"Int":null}`), 422, "invalid_intent"),
		hostilePost("value with no variant", withPrice(`{}`), 422, "invalid_intent"),
		hostilePost("value with two variants", withPrice(`{"Int":1,"String":"1"}`), 422, "invalid_intent"),
		hostilePost("unknown variant Float", withPrice(`{"Float":30.5}`), 422, "invalid_intent"),
		hostilePost("variant in lower case", withPrice(`{"int":3000}`), 422, "invalid_intent"),
		hostilePost("bare value", withPrice(`3000`), 422, "invalid_intent"),
		hostilePost("String as a number", withSize(`{"String":5}`), 422, "invalid_intent"),
		hostilePost("Set of mixed elements", withColors(`{"Set":{"String":["navy",1]}}`), 422, "invalid_intent"),
		hostilePost("Set of Bool", withColors(`{"Set":{"Bool":[true]}}`), 422, "invalid_intent"),
		hostilePost("Set of Sets", withColors(`{"Set":{"Set":[{"String":["a"]}]}}`), 422, "invalid_intent"),
		hostilePost("Set not an array", withColors(`{"Set":{"String":"navy"}}`), 422, "invalid_intent"),
		hostilePost("Set with two element types", withColors(`{"Set":{"String":["a"],"Int":[1]}}`), 422, "invalid_intent"),
		hostilePost("Set nested 5000 deep", withColors(strings.Repeat(`{"Set":`, 5000)+`1`+strings.Repeat(`}`, 5000)), 422, "invalid_intent"),
		hostilePost("parameter missing", f.signedAttrs(`{"fields":{"size":`+size+`,"colors":`+colors+`}}`), 422, "attrs_mismatch"),
		hostilePost("parameter of the wrong type", withSize(`{"Int":5}`), 422, "attrs_mismatch"),
		hostilePost("set parameter given a string", withColors(`{"String":"navy"}`), 422, "attrs_mismatch"),
		hostilePost("set of the wrong element type", withColors(`{"Set":{"Int":[1,2]}}`), 422, "attrs_mismatch"),
		hostilePost("undeclared parameter", f.signedAttrs(`{"fields":{"size":`+size+`,"colors":`+colors+`,"max_price_cents":`+price+`,"discount":{"Int":5}}}`), 422, "attrs_mismatch"),
		hostilePost("parameter named with NUL", f.signedAttrs(`{"fields":{"size":`+size+`,"colors":`+colors+`,"max_price_cents":`+price+`,"\u0000":{"Int":5}}}`), 422, "attrs_mismatch"),
		hostilePost("attrs left out", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":%q}`, uuid.NewString(), f.s.policy))), 422, "attrs_mismatch"),
		hostilePost("129 attrs fields", f.signedAttrs(`{"fields":{`+strings.Join(manyFields, ",")+`}}`), 422, intenthttp.CodeLimitExceeded),
		hostilePost("set of 1025 elements", withColors(`{"Set":{"String":[`+strings.Join(bigSet, ",")+`]}}`), 422, intenthttp.CodeLimitExceeded),
		hostilePost("string of 4097 bytes", withSize(`{"String":"`+strings.Repeat("M", 4097)+`"}`), 422, intenthttp.CodeLimitExceeded),
		hostilePost("set element of 4097 bytes", withColors(`{"Set":{"String":["`+strings.Repeat("n", 4097)+`"]}}`), 422, intenthttp.CodeLimitExceeded),
	}
}

// unicodeCases: strings at the edges of Unicode, in the body and in what JCS signs.
func (f *hostileFixture) unicodeCases() []hostileCase {
	withSize := func(size string) []byte {
		return f.signedAttrs(fmt.Sprintf(`{"fields":{"size":{"String":%s},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000}}}`, size))
	}
	// A body whose signature is over the JCS of the intent with U+FFFD where the
	// sender wrote a lone surrogate or a byte that is not UTF-8: what a lenient
	// decoder would make of it. It must be refused, not stored as other text.
	replaced := func(size string) []byte {
		in := f.intent(uuid.NewString(), fmt.Sprintf(`{"fields":{"size":{"String":%s},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000}}}`, size))
		clean := bytes.ReplaceAll(in, []byte(size), []byte(`"\ufffd"`))
		return hostileBody(in, `{"Signed":`+hostileEdSig(f.keys[0], hostileCanon(clean))+`}`)
	}
	// JSON text is UTF-8 (RFC 8259, section 8.1): bytes that are not are no JSON.
	return []hostileCase{
		hostilePost("lone high surrogate", withSize(`"\ud800"`), 400, "invalid_json"),
		hostilePost("lone low surrogate", withSize(`"\udc00"`), 400, "invalid_json"),
		hostilePost("reversed surrogate pair", withSize(`"\udc00\ud800"`), 400, "invalid_json"),
		hostilePost("lone surrogate signed as U+FFFD", replaced(`"\ud800"`), 400, "invalid_json"),
		hostilePost("lone surrogate in the id", f.signed(f.intent(`\ud800`+uuid.NewString()[1:], hostileAttrs)), 422, "invalid_intent"),
		hostilePost("lone surrogate in a field name", f.signedAttrs(`{"fields":{"\ud800":{"Int":1}}}`), 400, "invalid_json"),
		hostilePost("overlong slash", withSize("\"\xc0\xaf\""), 400, "invalid_json"),
		hostilePost("overlong NUL", withSize("\"\xc0\x80\""), 400, "invalid_json"),
		hostilePost("overlong slash signed as U+FFFD", replaced("\"\xc0\xaf\""), 400, "invalid_json"),
		hostilePost("UTF-8 encoded surrogate", withSize("\"\xed\xa0\x80\""), 400, "invalid_json"),
		hostilePost("byte 0xff in a string", withSize("\"M\xff\""), 400, "invalid_json"),
		hostilePost("truncated UTF-8 sequence", withSize("\"M\xe2\x82\""), 400, "invalid_json"),
		hostilePost("code point above U+10FFFF", withSize("\"\xf4\x90\x80\x80\""), 400, "invalid_json"),
		hostilePost("byte 0xff in a key", []byte("{\"intent\xff\":{},\"authorship\":\"Unsigned\"}"), 400, "invalid_json"),
		// Valid Unicode the policy does not accept as a size: stored as sent, signed
		// over its JCS form (NUL and U+2028 escaped or not, a BOM inside a string).
		{name: "intents/NUL inside a string is valid", method: "POST", path: "/intents", ctype: hostileJSON, body: withSize(`"M\u0000"`), status: 200, stores: true},
		{name: "intents/BOM inside a string is valid", method: "POST", path: "/intents", ctype: hostileJSON, body: withSize("\"\ufeffM\""), status: 200, stores: true},
		{name: "intents/escaped and raw astral characters", method: "POST", path: "/intents", ctype: hostileJSON, body: withSize(`"\ud83d\ude00😀\u2028"`), status: 200, stores: true},
	}
}
