package main

import (
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// proposalCases: POST /intents/{id}/proposal. The bodies go to the decided intent:
// the body is checked before the intent's state, so each refusal is the same as for an
// open one, and a body wrongly let through gets 409 instead of spoiling the open
// intent the other cases need.
func (f *hostileFixture) proposalCases() []hostileCase {
	to := func(name, id string, b []byte, status int, code string) hostileCase {
		return hostileCase{name: "proposal/" + name, method: "POST", path: "/intents/" + id + "/proposal", ctype: hostileJSON, body: b, status: status, code: code}
	}
	open, decided := f.open, f.decided
	good := []byte(`{"solution":"` + solutionPasses + `"}`)
	const ip = "invalid_proposal"
	cs := []hostileCase{
		to("id not a UUID", "nope", good, 400, "invalid_id"),
		to("id of 37 characters", open+"0", good, 400, "invalid_id"),
		to("id without hyphens", strings.ReplaceAll(open, "-", ""), good, 400, "invalid_id"),
		to("id with an encoded NUL", "%00", good, 400, "invalid_id"),
		to("id a policy id", f.s.policy, good, 400, "invalid_id"),
		to("id not a UUID and the body not JSON", "nope", []byte(`{`), 400, "invalid_id"),
		to("unknown intent", hostileUnknownID, good, 404, "intent_not_found"),
		to("empty body", decided, []byte{}, 400, "invalid_json"),
		to("not JSON", decided, []byte(`solution=x`), 400, "invalid_json"),
		to("truncated", decided, good[:len(good)-2], 400, "invalid_json"),
		to("trailing garbage", decided, append(append([]byte{}, good...), "}"...), 400, "invalid_json"),
		to("overlong UTF-8 in the solution", f.victim, []byte("{\"solution\":\"https://shop.example/\xc0\xaf\"}"), 400, "invalid_json"),
		to("lone surrogate escaped in the solution", f.victim, []byte(`{"solution":"https://shop.example/\ud800"}`), 400, "invalid_json"),
		to("body null", decided, []byte(`null`), 422, ip),
		to("body array", decided, []byte(`["x"]`), 422, ip),
		to("body string", decided, []byte(`"x"`), 422, ip),
		to("missing solution", decided, []byte(`{}`), 422, ip),
		to("solution null", decided, []byte(`{"solution":null}`), 422, ip),
		to("solution number", decided, []byte(`{"solution":42}`), 422, ip),
		to("solution array", decided, []byte(`{"solution":["x"]}`), 422, ip),
		to("solution object", decided, []byte(`{"solution":{"url":"x"}}`), 422, ip),
		to("solution empty", decided, []byte(`{"solution":""}`), 422, ip),
		to("solution of 16385 bytes", decided, []byte(`{"solution":"`+strings.Repeat("s", 16385)+`"}`), 422, ip),
		to("solution of 16386 bytes in escapes", decided, []byte(`{"solution":"`+strings.Repeat(`\u00e9`, 8193)+`"}`), 422, ip),
		to("duplicate solution", decided, []byte(`{"solution":"a","solution":"b"}`), 422, ip),
		to("unknown field", decided, []byte(`{"solution":"x","price":1}`), 422, ip),
		to("superseded metadata", decided, []byte(`{"solution":"x","metadata":{"a":1}}`), 422, "superseded_shape"),
		to("superseded metadata alone", decided, []byte(`{"metadata":null}`), 422, "superseded_shape"),
		to("over the body limit", decided, hostilePad(good, hostileMaxBody+1), 413, "body_too_large"),
		to("lone surrogate solution to a decided intent", decided, []byte(`{"solution":"\ud800"}`), 400, "invalid_json"),
		to("second proposal", decided, good, 409, "proposal_exists"),
		to("second proposal in upper case", strings.ToUpper(decided), good, 409, "proposal_exists"),
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json; charset=iso-8859-1", "multipart/form-data; boundary=x"} {
		c := to("content type "+ct, decided, good, 400, "unsupported_content_type")
		c.ctype = ct
		cs = append(cs, c)
	}
	c := to("no content type", decided, good, 400, "unsupported_content_type")
	c.ctype = ""
	return append(cs, c)
}

// readCases: GET and DELETE with ids that name nothing or are not ids.
func (f *hostileFixture) readCases() []hostileCase {
	get := func(name, path string, status int, code string) hostileCase {
		return hostileCase{name: "get/" + name, method: "GET", path: path, status: status, code: code}
	}
	del := func(name, path string, status int, code string) hostileCase {
		return hostileCase{name: "delete/" + name, method: "DELETE", path: path, status: status, code: code}
	}
	const inf, pnf = "intent_not_found", "policy_not_found"
	return []hostileCase{
		get("intent unknown", "/intents/"+hostileUnknownID, 404, inf),
		get("intent not a UUID", "/intents/nope", 404, inf),
		get("intent id with NUL", "/intents/%00", 404, inf),
		get("intent id dot-dot", "/intents/..", 404, inf),
		get("intent id of 10000 characters", "/intents/"+strings.Repeat("a", 10000), 404, inf),
		get("intent id lone surrogate escaped", "/intents/%ED%A0%80", 404, inf),
		get("status unknown", "/intents/"+hostileUnknownID+"/status", 404, inf),
		get("status not a UUID", "/intents/%20/status", 404, inf),
		get("proof unknown", "/intents/"+hostileUnknownID+"/proof", 404, inf),
		get("proof not a UUID", "/intents/nope/proof", 404, inf),
		get("proof of an open intent", "/intents/"+f.open+"/proof", 404, "proof_not_ready"),
		get("policy unknown", "/policies/"+hostileNoPolicy, 404, pnf),
		get("policy bad Base58", "/policies/0OIl", 404, pnf),
		get("policy hex digest", "/policies/"+strings.Repeat("ab", 32), 404, pnf),
		get("policy with a leading 1", "/policies/1"+f.s.policy, 404, pnf),
		get("policy of 10000 characters", "/policies/"+strings.Repeat("z", 10000), 404, pnf),
		del("policy unknown", "/policies/"+hostileNoPolicy, 404, pnf),
		del("policy bad Base58", "/policies/0OIl", 404, pnf),
		del("policy an intent id", "/policies/"+f.open, 404, pnf),
		del("policy in use", "/policies/"+f.s.policy, 409, "policy_in_use"),
		del("policy in lower case", "/policies/"+strings.ToLower(f.spare), 404, pnf),
	}
}

// eventCases: GET /events with bad resume points and filters. The ones that are
// fine open a stream, which the check closes at once.
func (f *hostileFixture) eventCases() []hostileCase {
	var cs []hostileCase
	const bad = "invalid_last_event_id"
	for _, v := range []string{"-1", "1.5", "1e3", "+1", "0x10", "abc", "9223372036854775808", "18446744073709551616",
		strings.Repeat("9", 400), "١", "1,2", "-0", "NaN"} {
		cs = append(cs, hostileCase{name: fmt.Sprintf("events/header last-event-id %q", hostileClipName(v)), method: "GET", path: "/events",
			header: []string{"Last-Event-ID", v}, status: 400, code: bad})
	}
	for _, v := range []string{"-1", "1.5", "1e3", "%2B1", "abc", "9223372036854775808", "", "%00", "1%2C2", "%201", "1%20", "%zz", "5%", "5;6"} {
		cs = append(cs, hostileCase{name: fmt.Sprintf("events/query last-event-id %q", v), method: "GET", path: "/events?last-event-id=" + v,
			status: 400, code: bad})
	}
	cs = append(cs,
		hostileCase{name: "events/header last-event-id empty", method: "GET", path: "/events", header: []string{"Last-Event-ID", ""}, status: 400, code: bad},
		hostileCase{name: "events/bad header wins over a good query", method: "GET", path: "/events?last-event-id=5", header: []string{"Last-Event-ID", "x"}, status: 400, code: bad},
		hostileCase{name: "events/good header wins over a bad query", method: "GET", path: "/events?last-event-id=x", header: []string{"Last-Event-ID", "5"}, status: 200},
		hostileCase{name: "events/largest last-event-id", method: "GET", path: "/events?last-event-id=9223372036854775807", status: 200},
		hostileCase{name: "events/type unknown", method: "GET", path: "/events?type=opened", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/type in upper case", method: "GET", path: "/events?type=SUCCESS", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/type empty", method: "GET", path: "/events?type=", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/type empty in a list", method: "GET", path: "/events?type=success,,failure", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/intent_id not a UUID", method: "GET", path: "/events?intent_id=42", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/intent_id empty", method: "GET", path: "/events?intent_id=", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/intent_id one bad in a list", method: "GET", path: "/events?intent_id=" + f.open + ",x", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/intent_id with NUL", method: "GET", path: "/events?intent_id=%00", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/intent_id that does not decode", method: "GET", path: "/events?intent_id=%zz", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/a name that does not decode", method: "GET", path: "/events?%zz=1", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/last-event-id that does not decode after a good filter", method: "GET", path: "/events?type=success&last-event-id=%zz", status: 400, code: bad},
		hostileCase{name: "events/pairs split by a semicolon", method: "GET", path: "/events?type=success;last-event-id=5", status: 400, code: "invalid_filter"},
	)
	return cs
}

func hostileClipName(s string) string {
	if len(s) > 24 {
		return s[:24] + "..."
	}
	return s
}

// routeCases: paths that are no route and methods a route does not serve.
func (f *hostileFixture) routeCases() []hostileCase {
	notAllowed := []struct{ method, path string }{
		{"GET", "/intents"}, {"PUT", "/intents"}, {"DELETE", "/intents"}, {"PATCH", "/intents"},
		{"POST", "/intents/" + f.open}, {"PUT", "/intents/" + f.open}, {"DELETE", "/intents/" + f.open},
		{"POST", "/intents/" + f.open + "/status"}, {"GET", "/intents/" + f.open + "/proposal"}, {"PUT", "/intents/" + f.open + "/proposal"},
		{"GET", "/policies"}, {"PUT", "/policies/" + f.s.policy}, {"POST", "/policies/" + f.s.policy}, {"PATCH", "/policies/" + f.s.policy},
		{"POST", "/events"}, {"DELETE", "/events"}, {"POST", "/info"}, {"DELETE", "/healthz"},
		{"BREW", "/intents"}, {"get", "/info"},
	}
	var cs []hostileCase
	for _, m := range notAllowed {
		cs = append(cs, hostileCase{name: fmt.Sprintf("route/%s %s", m.method, m.path), method: m.method, path: m.path, ctype: hostileJSON,
			body: []byte(`{}`), status: 405, code: "method_not_allowed"})
	}
	for _, p := range []string{"/nowhere", "/intents/", "/policies/", "/intents/" + f.open + "/", "/intents/" + f.open + "/status/x",
		"/v1/intents", "/INTENTS", "/events/", "//intents", "/templates", "/validate", "/config"} {
		cs = append(cs, hostileCase{name: "route/GET " + p, method: "GET", path: p, status: 404, code: "not_found"})
	}
	// The superseded operations of spec part 9 are gone, whatever their paths were.
	cs = append(cs,
		hostileCase{name: "route/POST /templates", method: "POST", path: "/templates", ctype: hostileText, body: []byte(demoPolicy), status: 404, code: "not_found"},
		hostileCase{name: "route/POST /config", method: "POST", path: "/config", ctype: hostileJSON, body: []byte(`{"evidence_extractor_url":""}`), status: 404, code: "not_found"},
	)
	return cs
}

// rawCases: requests only a raw connection can send.
func (f *hostileFixture) rawCases() []hostileCase {
	host := "Host: " + f.addr + "\r\n"
	valid := string(f.signed(f.intent(uuid.NewString(), hostileAttrs)))
	post := func(path, ctype, head, b string) string {
		return "POST " + path + " HTTP/1.1\r\n" + host + "Content-Type: " + ctype + "\r\n" + head + "\r\n" + b
	}
	return []hostileCase{
		{name: "raw/intent body shorter than its Content-Length", raw: post("/intents", hostileJSON, fmt.Sprintf("Content-Length: %d\r\n", len(valid)), valid[:len(valid)/2]),
			halfClose: true, status: 400, code: "invalid_json"},
		{name: "raw/proposal body shorter than its Content-Length", raw: post("/intents/"+f.decided+"/proposal", hostileJSON, "Content-Length: 100\r\n", `{"solution":"`),
			halfClose: true, status: 400, code: "invalid_json"},
		{name: "raw/policy body shorter than its Content-Length", raw: post("/policies", hostileText, "Content-Length: 100\r\n", "name x\nrequires {"),
			halfClose: true, status: 400, code: "invalid_json"},
		{name: "raw/chunked intent cut inside a chunk", raw: post("/intents", hostileJSON, "Transfer-Encoding: chunked\r\n", fmt.Sprintf("%x\r\n%s", len(valid), valid[:20])),
			halfClose: true, status: 400, code: "invalid_json"},
		{name: "raw/chunked intent with a bad chunk size", raw: post("/intents", hostileJSON, "Transfer-Encoding: chunked\r\n", "zz\r\n"+valid+"\r\n0\r\n\r\n"),
			status: 400, code: "invalid_json"},
		{name: "raw/Content-Length over the limit, no body sent", raw: post("/intents", hostileJSON, fmt.Sprintf("Content-Length: %d\r\n", hostileMaxBody+1), ""),
			status: 413, code: "body_too_large"},
		{name: "raw/Content-Length of 2^63-1", raw: post("/intents", hostileJSON, "Content-Length: 9223372036854775807\r\n", ""),
			status: 413, code: "body_too_large"},
		{name: "raw/Content-Length negative", raw: post("/intents", hostileJSON, "Content-Length: -1\r\n", ""), status: 400, protocol: true},
		{name: "raw/Content-Length not a number", raw: post("/intents", hostileJSON, "Content-Length: ten\r\n", ""), status: 400, protocol: true},
		{name: "raw/two Content-Lengths", raw: post("/intents", hostileJSON, "Content-Length: 2\r\nContent-Length: 3\r\n", "{}"), status: 400, protocol: true},
		{name: "raw/no Host", raw: "GET /info HTTP/1.1\r\n\r\n", status: 400, protocol: true},
		{name: "raw/header without a colon", raw: "GET /info HTTP/1.1\r\n" + host + "Last-Event-ID 5\r\n\r\n", status: 400, protocol: true},
		{name: "raw/header of 70000 bytes", raw: "GET /events HTTP/1.1\r\n" + host + "Last-Event-ID: " + strings.Repeat("9", 70000) + "\r\n\r\n", status: 431, protocol: true},
		{name: "raw/NUL in the path", raw: "GET /intents/\x00 HTTP/1.1\r\n" + host + "\r\n", status: 400, protocol: true},
		{name: "raw/unknown HTTP version", raw: "GET /info HTTP/9.9\r\n" + host + "\r\n", status: 505, protocol: true},
	}
}
