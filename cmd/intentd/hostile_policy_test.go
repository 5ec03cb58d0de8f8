package main

import (
	"fmt"
	"net/http"
	"strings"

	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/policy"
)

// policyCases: POST /policies with sources that are not policies.
func (f *hostileFixture) policyCases() []hostileCase {
	post := func(name, src string, status int, code string) hostileCase {
		return hostileCase{name: "policies/" + name, method: "POST", path: "/policies", ctype: hostileText, body: []byte(src), status: status, code: code}
	}
	const pi = "policy_invalid"
	deep := strings.Repeat("(", 30000) + "1" + strings.Repeat(")", 30000)
	padded := demoPolicy + "#" + strings.Repeat("x", policy.MaxSourceBytes-len(demoPolicy)-2) + "\n"
	cs := []hostileCase{
		post("empty", "", 400, pi),
		post("only a comment", "# nothing\n", 400, pi),
		post("JSON", `{"name":"x","requires":["evidence.a == 1"]}`, 400, pi),
		post("no requires", "name x\n", 400, pi),
		post("empty requires", "name x\nrequires { }\n", 400, pi),
		post("unterminated string", "name x\nrequires { evidence.a == \"abc; }\n", 400, pi),
		post("lone surrogate escape", "name x\nrequires { evidence.a == \"\\ud800\"; }\n", 400, pi),
		post("NUL byte", "name x\nrequires { evidence.a == 1;\x00 }\n", 400, pi),
		post("not UTF-8", "name x\nrequires { evidence.a == \"\xc0\xaf\"; }\n", 400, pi),
		post("byte order mark", "\ufeff"+"name x\nrequires { evidence.a == 1; }\n", 400, pi),
		post("integer above int64", "name x\nrequires { evidence.a == 9223372036854775808; }\n", 400, pi),
		post("unknown type", "name x\nparameters { a: integer }\nrequires { parameters.a == 1; }\n", 400, pi),
		post("type error", "name x\nrequires { evidence.a == 1 and evidence.a == \"s\"; }\n", 400, pi),
		post("parentheses 30000 deep", "name x\nrequires { evidence.a == "+deep+"; }\n", 400, pi),
		post("over the source limit", padded+"#", 413, intenthttp.CodePolicyTooLarge),
		post("over the body limit", demoPolicy+"#"+strings.Repeat("x", hostileMaxBody), 413, "body_too_large"),
		// At the size limit, with the padding a comment: the demo policy's id, which is
		// stored already, so nothing changes.
		{name: "policies/at the source limit, the demo policy again", method: "POST", path: "/policies", ctype: hostileText, body: []byte(padded), status: 200},
		{name: "policies/media type in upper case", method: "POST", path: "/policies", ctype: "TEXT/PLAIN; charset=UTF-8", body: []byte(demoPolicy), status: 200},
	}
	for _, ct := range []string{"application/json", "text/html", "text/plain; charset=utf-16", "text/plain; charset=latin1", "text/plain;;", "application/octet-stream"} {
		c := post("content type "+ct, demoPolicy, 400, "unsupported_content_type")
		c.ctype = ct
		cs = append(cs, c)
	}
	c := post("no content type", demoPolicy, 400, "unsupported_content_type")
	c.ctype = ""
	return append(cs, c)
}

// compilerLimitCases: policies one past each limit of docs/policy-language.md, and
// exactly at it, which are stored.
func (f *hostileFixture) compilerLimitCases() []hostileCase {
	post := func(name, src string, status int, code string) hostileCase {
		c := hostileCase{name: "policies/" + name, method: "POST", path: "/policies", ctype: hostileText, body: []byte(src), status: status, code: code}
		c.stores = status == http.StatusOK
		return c
	}
	constraints := func(n int) string {
		var b strings.Builder
		b.WriteString("name many_constraints\nrequires {\n")
		for i := range n {
			fmt.Fprintf(&b, "  evidence.a != %d;\n", i)
		}
		b.WriteString("}\n")
		return b.String()
	}
	parameters := func(n int) string {
		var b strings.Builder
		b.WriteString("name many_parameters\nparameters {\n")
		for i := range n {
			fmt.Fprintf(&b, "  p%d: int\n", i)
		}
		b.WriteString("}\nrequires { parameters.p0 == 1; }\n")
		return b.String()
	}
	declared := func(n int) string {
		var b strings.Builder
		b.WriteString("name many_evidence\nevidence {\n")
		for i := range n {
			fmt.Fprintf(&b, "  e%d: int\n", i)
		}
		b.WriteString("}\nrequires { evidence.e0 == 1; }\n")
		return b.String()
	}
	inferred := func(n int) string {
		terms := make([]string, n)
		for i := range terms {
			terms[i] = fmt.Sprintf("evidence.e%d == 1", i)
		}
		return "name inferred_evidence\nrequires { " + strings.Join(terms, " or ") + "; }\n"
	}
	depth := func(n int) string {
		return "name deep\nrequires { " + strings.Repeat("not (", n) + "evidence.b" + strings.Repeat(")", n) + "; }\n"
	}
	str := func(n int) string {
		return fmt.Sprintf("name long_string\nrequires { evidence.s == %q; }\n", strings.Repeat("s", n))
	}
	set := func(n int) string {
		elems := make([]string, n)
		for i := range elems {
			elems[i] = fmt.Sprint(i)
		}
		return "name big_set\nrequires { evidence.n in {" + strings.Join(elems, ", ") + "}; }\n"
	}
	const pi = "policy_invalid"
	return []hostileCase{
		post("257 constraints", constraints(policy.MaxConstraints+1), 400, pi),
		post("129 parameters", parameters(policy.MaxParameters+1), 400, pi),
		post("257 declared evidence fields", declared(policy.MaxEvidence+1), 400, pi),
		post("257 inferred evidence fields", inferred(policy.MaxEvidence+1), 400, pi),
		post("nesting 65 deep", depth(policy.MaxDepth+1), 400, pi),
		post("nesting 10000 deep", depth(10000), 400, pi),
		post("string literal of 4097 bytes", str(policy.MaxStringBytes+1), 400, pi),
		post("set literal of 1025 elements", set(policy.MaxSetElements+1), 400, pi),
		post("256 constraints", constraints(policy.MaxConstraints), 200, ""),
		post("128 parameters", parameters(policy.MaxParameters), 200, ""),
		post("256 declared evidence fields", declared(policy.MaxEvidence), 200, ""),
		post("256 inferred evidence fields", inferred(policy.MaxEvidence), 200, ""),
		post("string literal of 4096 bytes", str(policy.MaxStringBytes), 200, ""),
		post("set literal of 1024 elements", set(policy.MaxSetElements), 200, ""),
	}
}
