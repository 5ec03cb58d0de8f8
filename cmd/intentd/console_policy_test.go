package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/chromedp/chromedp"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/proof"
)

// vmPolicies are policies written for the differential test: between them they use
// every instruction, every function, chains, optional parameters, evidence of the older
// dialect (typed by inference, or any), overflow, and values long enough to be cut in
// a reason.
var vmPolicies = []string{
	demoPolicy,
	`name arith
evidence { a: int  b: int  c: int }
requires {
  evidence.a + evidence.b <= 100;
  evidence.a * evidence.b > -5;
  -evidence.a < evidence.c - evidence.b;
  evidence.a - -9223372036854775808 != 0;
  0 <= evidence.a < evidence.b <= evidence.c;
  evidence.a == evidence.b == evidence.c != 7;
  evidence.a * 4611686018427387904 >= evidence.c;
}`,
	`name logic
parameters { flag: bool  n: int }
evidence { p: bool  q: bool  r: bool  n: int }
requires {
  (evidence.p or evidence.q) and evidence.r;
  not (evidence.p and not evidence.q) or evidence.n > parameters.n;
  evidence.p == parameters.flag;
  true;
  false or evidence.r;
  not evidence.p;
}`,
	`name strings_and_sets
parameters { name: string  tags: set<string>  sizes: set<int>  brands: optional set<string>  cap: optional int }
evidence { s: string  t: set<string>  u: set<int>  n: int }
requires {
  lower(evidence.s) == lower(parameters.name);
  upper(evidence.s) != "STRASSE";
  len(evidence.s) <= 8;
  contains(evidence.s, "a") or starts_with(evidence.s, "İ") or ends_with(evidence.s, "日本");
  subset(evidence.t, parameters.tags);
  intersects(evidence.u, parameters.sizes);
  evidence.n in parameters.sizes;
  evidence.s not in {"black", "white", "a\"b\\c\n", "\u0001"};
  len(evidence.t) + len(parameters.tags) > 2;
  evidence.t == parameters.tags;
  optional: evidence.s in parameters.brands;
  optional: evidence.n <= parameters.cap;
  evidence.s in parameters.brands;
  evidence.n in {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  evidence.s in {"a00", "a01", "a02", "a03", "a04", "a05", "a06", "a07", "a08", "a09", "a10", "a11", "a12", "a13", "a14", "a15", "a16", "a17"};
}`,
	`name older_dialect
extractor "catalog.v2"
parameters { size: string  max: int }
requires {
  evidence.size == parameters.size;
  evidence.price + evidence.tax <= parameters.max;
  evidence.x == evidence.y;
  evidence.tag in evidence.tags;
  subset(evidence.left, evidence.right);
  intersects(evidence.left, {"a", "b"});
  len(evidence.anything) > 0;
  evidence.flag;
  -evidence.z < 0 < evidence.w;
  evidence.k != evidence.k2;
}`,
	`name mandate
extractor "catalog.v2"
parameters { budget: int  per_day: int  until: int  units: optional int }
evidence { price: int  shipping: int  tags: set<string> }
amount evidence.price + evidence.shipping * 2 - len(evidence.tags)
period day
requires {
  mandate.spent + purchase.amount <= parameters.budget;
  mandate.purchases < 3 and mandate.period_purchases < parameters.per_day;
  mandate.period_spent + purchase.amount < parameters.budget or decision.time > parameters.until;
  decision.time <= parameters.until;
  optional: purchase.amount * parameters.units < 9223372036854775807 - mandate.spent;
  -purchase.amount <= 0 <= decision.time - 1700000000 <= mandate.period_spent;
}`,
	`name mandate_older_dialect
amount evidence.price - evidence.discount
period week
requires {
  purchase.amount + mandate.period_spent < 1000;
  evidence.tag in {"a", "b"} or mandate.spent == 0;
  decision.time != 0;
}`,
	`name literals
requires {
  -9223372036854775808 < 0;
  - -5 == 5;
  "\u00e9t\u00E9 \ud83d\ude00" != "x";
  {1, 2} == {2, 1, 1};
  len("héllo") == 5;
  upper("straße ᾳ") == "STRASSE ᾼ";
  lower("İ") == "i";
}`,
}

// corpusPolicies reads the compiler's corpus: the sources of testdata/pretty, the
// sources of the FuzzCompile corpus that compile, and the bytecode of the FuzzDecode
// corpus, loaded or not.
func corpusPolicies(t *testing.T) (sources []string, bytecodes [][]byte) {
	t.Helper()
	dir := filepath.Join("..", "..", "policy", "testdata")
	srcs, _ := filepath.Glob(filepath.Join(dir, "pretty", "*.src"))
	for _, f := range srcs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, string(b))
	}
	fuzz := func(target string) []string {
		files, _ := filepath.Glob(filepath.Join(dir, "fuzz", target, "*"))
		var out []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// "go test fuzz v1", then one value: string("...") or []byte("...").
			_, v, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
			v = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(v, "string("), "[]byte("), ")")
			s, err := strconv.Unquote(v)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			t.Fatalf("no corpus in %s", filepath.Join(dir, "fuzz", target))
		}
		return out
	}
	for _, s := range fuzz("FuzzCompile") {
		if _, err := policy.Compile(s); err == nil {
			sources = append(sources, s)
		}
	}
	for _, s := range fuzz("FuzzDecode") {
		bytecodes = append(bytecodes, []byte(s))
	}
	if len(sources) == 0 {
		t.Fatal("no policy of the corpus compiles")
	}
	return sources, bytecodes
}

// Raw evidence values, as JSON text, by the type they are meant for; any field draws
// from all of them.
var (
	evInts = []string{"0", "1", "-1", "5", "42", "100", "1999", "3000", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "2.0", "1e3", "4611686018427387904", "3037000500", "-0"}
	evStrings = []string{`""`, `"M"`, `"a"`, `"navy"`, `"black"`, `"İstanbul"`, `"straße"`, `"ᾳ"`, `"日本"`, `"\ud83d\ude00"`,
		`"a\"b\\c\n"`, `"\u0001"`, `"t-shirt"`, `"\ufeffbom"`, `"a00"`, `"a17"`,
		`"` + strings.Repeat("é", 40) + `x` + strings.Repeat("日", 10) + `"`}
	evBools = []string{"true", "false"}
	evSets  = []string{`[]`, `["a","b"]`, `["b","a","a"]`, `["navy","white"]`, `[1,2,3]`, `[3,1]`, `[1,"a"]`, `["a",1]`,
		`[1.5]`, `[9223372036854775807]`, `["` + strings.Repeat(`x","y`, 12) + `"]`, `[true]`}
	evOther = []string{"null", `{"x":1}`}
)

func evPool(t policy.Type) []string {
	switch t {
	case policy.TypeInt:
		return evInts
	case policy.TypeString:
		return evStrings
	case policy.TypeBool:
		return evBools
	case policy.TypeStringSet, policy.TypeIntSet:
		return evSets
	}
	return slices.Concat(evInts, evStrings, evBools, evSets, evOther)
}

// attrValue is a wire attribute of type t.
func attrValue(rng *rand.Rand, t policy.Type) string {
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	switch t {
	case policy.TypeInt:
		return `{"Int":` + pick([]string{"0", "1", "3", "100", "3000", "-7", "9223372036854775807", "-9223372036854775808"}) + `}`
	case policy.TypeString:
		return `{"String":` + pick([]string{`"M"`, `"navy"`, `"STRASSE"`, `"istanbul"`, `""`, `"a"`}) + `}`
	case policy.TypeBool:
		return `{"Bool":` + pick(evBools) + `}`
	case policy.TypeStringSet:
		return `{"Set":{"String":` + pick([]string{`[]`, `["a","b"]`, `["navy","white","a"]`, `["b"]`}) + `}}`
	}
	return `{"Set":{"Int":` + pick([]string{`[]`, `[1,2,3]`, `[5]`, `[42,1]`}) + `}}`
}

// randomCase makes attrs and evidence for p: mostly values of the declared types, some
// absent, some of another type.
func randomCase(rng *rand.Rand, p *policy.Policy) (attrs, ev string) {
	var fields, evs []string
	for _, d := range p.Parameters() {
		switch r := rng.IntN(20); {
		case r == 0:
			continue
		case r == 1:
			fields = append(fields, strconv.Quote(d.Name)+":"+attrValue(rng, policy.TypeInt+policy.Type(rng.IntN(5))))
		default:
			fields = append(fields, strconv.Quote(d.Name)+":"+attrValue(rng, d.Type))
		}
	}
	for _, f := range p.EvidenceSchema() {
		pool := evPool(f.Type)
		switch r := rng.IntN(10); {
		case r == 0:
			continue
		case r == 1:
			pool = evPool(policy.TypeAny)
		}
		evs = append(evs, strconv.Quote(f.Name)+":"+pool[rng.IntN(len(pool))])
	}
	return `{"fields":{` + strings.Join(fields, ",") + `}}`, "{" + strings.Join(evs, ",") + "}"
}

// randomContext is a mandate's context: totals at the edges of int64 among small
// ones, and a decision time, or none, as Unix seconds in the range of a JavaScript Date.
func randomContext(rng *rand.Rand) *vmContext {
	n := func() string {
		return []string{"0", "1", "2", "100", "2499", "5000", "-1", "9223372036854775807", "-9223372036854775808"}[rng.IntN(9)]
	}
	c := &vmContext{Spent: n(), Purchases: n(), PeriodSpent: n(), PeriodPurchases: n()}
	switch rng.IntN(4) {
	case 0:
	case 1:
		c.Time = strconv.FormatInt(rng.Int64N(8e10)-4e10, 10)
	default:
		c.Time = strconv.FormatInt(1798761600+rng.Int64N(1<<26), 10) // 2027, give or take a year
	}
	return c
}

// vmContext is a policy.Context as the page receives it: decimal int64s, and the
// time as Unix seconds ("" for none).
type vmContext struct {
	Spent           string `json:"spent"`
	Purchases       string `json:"purchases"`
	PeriodSpent     string `json:"periodSpent"`
	PeriodPurchases string `json:"periodPurchases"`
	Time            string `json:"time"`
}

func (c *vmContext) context() policy.Context {
	if c == nil {
		return policy.Context{}
	}
	n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	out := policy.Context{Spent: n(c.Spent), Purchases: n(c.Purchases), PeriodSpent: n(c.PeriodSpent), PeriodPurchases: n(c.PeriodPurchases)}
	if c.Time != "" {
		out.Time = time.Unix(n(c.Time), 0)
	}
	return out
}

// vmCase is one input of the differential test, and what the Go side makes of it.
type vmCase struct {
	Bytecode string     `json:"bytecode"` // Base64
	Attrs    string     `json:"attrs,omitempty"`
	Evidence string     `json:"evidence,omitempty"`
	Context  *vmContext `json:"context,omitempty"`
}

// vmResult is what one side answers for a case.
type vmResult struct {
	Error    string      `json:"error"`
	Failures []vmFailure `json:"failures"`
	Kind     string      `json:"kind"`
	Missing  []string    `json:"missing"`
	// The amount part: Policy.Amount's amount (decimal), or its error and the evidence
	// that error names; and the start of the period that holds the case's time, in
	// Unix seconds, for a policy with a period.
	Amount        string   `json:"amount,omitempty"`
	AmountError   string   `json:"amountError,omitempty"`
	AmountMissing []string `json:"amountMissing,omitempty"`
	PeriodStart   string   `json:"periodStart,omitempty"`
}

type vmFailure struct {
	Index      int      `json:"index"`
	PrettyExpr string   `json:"pretty_expr"`
	Reason     string   `json:"reason"`
	Missing    []string `json:"missing"`
}

func goResult(c vmCase) vmResult {
	code, _ := base64.StdEncoding.DecodeString(c.Bytecode)
	p, err := policy.Decode(code)
	if err != nil {
		return vmResult{Error: err.Error()}
	}
	if c.Evidence == "" {
		return vmResult{}
	}
	attrs, err := policy.DecodeAttrs([]byte(c.Attrs))
	if err != nil {
		return vmResult{Error: "attrs: " + err.Error()}
	}
	dec := json.NewDecoder(strings.NewReader(c.Evidence))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil {
		return vmResult{Error: "evidence: " + err.Error()}
	}
	fails := p.EvaluateIn(attrs, ev, c.Context.context())
	r := vmResult{Failures: []vmFailure{}, Missing: []string{}}
	switch n, ok, err := p.Amount(attrs, ev); {
	case err != nil:
		var ae *policy.AmountError
		errors.As(err, &ae)
		r.AmountError, r.AmountMissing = err.Error(), ae.MissingEvidence
	case ok:
		r.Amount = strconv.FormatInt(n, 10)
	}
	if c.Context != nil && c.Context.Time != "" && p.Period() != "" {
		r.PeriodStart = strconv.FormatInt(p.PeriodStart(c.Context.context().Time).Unix(), 10)
	}
	for _, f := range fails {
		r.Failures = append(r.Failures, vmFailure{f.Index, f.PrettyExpr, f.Reason, append([]string{}, f.MissingEvidence...)})
	}
	kind, missing := intentd.ClassifyFailures(fails)
	r.Kind = string(kind)
	r.Missing = append(r.Missing, missing...)
	return r
}

// vmScript runs the cases through policyvm.js in the page, answering JSON text.
const vmScript = `(async (base, cases) => {
  const vm = await import(base + "policyvm.js");
  const { parseStrict } = await import(base + "codec.js");
  const exact = text => parseStrict(text, t => new vm.JSONNumber(t));
  return JSON.stringify(cases.map(c => {
    const d = vm.decode(Uint8Array.from(atob(c.bytecode), ch => ch.charCodeAt(0)));
    if (d.error) return { error: d.error };
    if (!c.evidence) return {};
    const a = vm.decodeAttrs(exact(c.attrs));
    if (a.error) return { error: "attrs: " + a.error };
    const ctx = c.context && { spent: BigInt(c.context.spent), purchases: BigInt(c.context.purchases),
      periodSpent: BigInt(c.context.periodSpent), periodPurchases: BigInt(c.context.periodPurchases),
      time: c.context.time ? new Date(Number(c.context.time) * 1000) : null };
    const fails = vm.evaluate(d.policy, a.attrs, exact(c.evidence), ctx || undefined);
    const { kind, missing } = vm.classify(fails);
    const out = { failures: fails, kind, missing };
    const am = vm.amount(d.policy, a.attrs, exact(c.evidence));
    if (am.error) Object.assign(out, { amountError: am.error, amountMissing: am.missing.length ? am.missing : undefined });
    else if (am.ok) out.amount = am.amount.toString();
    if (ctx && ctx.time && d.policy.period) out.periodStart = String(Math.floor(vm.periodStart(d.policy, ctx.time).getTime() / 1000));
    return out;
  }));
})`

// TestConsolePolicyVM runs the console's policy machine (policyvm.js) in Chromium on
// the compiler's corpus and on policies written for it, and compares everything with the
// Go decoder and machine: whether bytecode loads and the message when it does not,
// including every truncation and many one-byte changes of each policy's bytecode; and
// for random attrs, evidence and contexts of a mandate, each failure's index,
// pretty_expr, reason and missing evidence, the failure kind, the amount or why there
// is none, and the start of the period. lower and upper are compared over every code
// point.
func TestConsolePolicyVM(t *testing.T) {
	// Not parallel: runs Chromium, whose 5s page waits two browsers at once could miss.
	s := startServer(t, nil)
	b := newConsoleBrowser(t, s)
	b.open("#/proof")
	b.wait("the console", `document.querySelector("h1")`, 5*time.Second)

	sources, bytecodes := corpusPolicies(t)
	sources = append(sources, vmPolicies...)
	rng := rand.New(rand.NewPCG(1, 2))
	var cases []vmCase
	enc := base64.StdEncoding.EncodeToString
	for i, src := range sources {
		p, err := policy.Compile(src)
		if err != nil {
			t.Fatalf("policy %d does not compile: %v\n%s", i, err, src)
		}
		code := p.Bytecode()
		cases = append(cases, vmCase{Bytecode: enc(code), Attrs: `{"fields":{}}`, Evidence: "{}"})
		for j := range 60 {
			a, e := randomCase(rng, p)
			c := vmCase{Bytecode: enc(code), Attrs: a, Evidence: e}
			if j%2 == 1 {
				// Half of the cases with a context: a policy that reads none decides
				// alike in any, and one that reads it is run in many.
				c.Context = randomContext(rng)
			}
			cases = append(cases, c)
		}
		// Damaged bytecode: every truncation, and changes of single bytes.
		for n := range len(code) {
			cases = append(cases, vmCase{Bytecode: enc(code[:n])})
		}
		for j := range code {
			for _, d := range []byte{1, 0x7f, 0x80, 0xff} {
				c := bytes.Clone(code)
				c[j] += d
				cases = append(cases, vmCase{Bytecode: enc(c)})
			}
		}
		cases = append(cases, vmCase{Bytecode: enc(append(bytes.Clone(code), 0))})
	}
	for _, code := range bytecodes {
		cases = append(cases, vmCase{Bytecode: enc(code), Attrs: `{"fields":{}}`, Evidence: "{}"})
	}

	input, _ := json.Marshal(cases)
	var text string
	b.eval(fmt.Sprintf("%s(%s, %s)", vmScript, jsString(b.base), input), &text)
	var got []vmResult
	if err := json.Unmarshal([]byte(text), &got); err != nil || len(got) != len(cases) {
		t.Fatalf("the page answered %d results for %d cases (%v)", len(got), len(cases), err)
	}
	loaded, failures, mismatches := 0, 0, 0
	for i, c := range cases {
		want := goResult(c)
		if want.Error == "" {
			loaded++
		}
		failures += len(want.Failures)
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got[i])
		if !bytes.Equal(wj, gj) {
			if mismatches++; mismatches <= 10 {
				code, _ := base64.StdEncoding.DecodeString(c.Bytecode)
				t.Errorf("case %d (bytecode %q, attrs %s, evidence %s):\n go: %s\n js: %s", i, code, c.Attrs, c.Evidence, wj, gj)
			}
		}
	}
	t.Logf("%d cases: %d loaded, %d constraint failures compared, %d mismatches", len(cases), loaded, failures, mismatches)
	if loaded < len(sources) || failures < 1000 {
		t.Errorf("the cases exercise too little: %d loaded, %d failures", loaded, failures)
	}

	// lower and upper, over every code point: Go's tables against the page's.
	var table [][3]rune
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if l, u := unicode.ToLower(r), unicode.ToUpper(r); (l != r || u != r) && !(r >= 0xd800 && r <= 0xdfff) {
			table = append(table, [3]rune{r, l, u})
		}
	}
	tj, _ := json.Marshal(table)
	var diff []string
	b.eval(fmt.Sprintf(`(async (base, table) => {
  const { mapCase } = await import(base + "policyvm.js");
  const go = new Map(table.map(([c, l, u]) => [c, [l, u]]));
  const diff = [];
  for (let c = 0x80; c <= 0x10ffff; c++) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    const ch = String.fromCodePoint(c), [l, u] = go.get(c) || [c, c];
    if (mapCase(ch, false) !== String.fromCodePoint(l) || mapCase(ch, true) !== String.fromCodePoint(u)) diff.push(c.toString(16));
  }
  return diff;
})(%s, %s)`, jsString(b.base), tj), &diff)
	if len(diff) > 0 {
		t.Errorf("lower or upper differ from Go's at %d code points, among them U+%s", len(diff), strings.Join(diff[:min(len(diff), 20)], " U+"))
	}
}

// resign gives a bundle a receipt changed by change and signed again with a new key, so
// that every digest and the signature hold and only the checks after them can object.
// The bundle is then checked against its own key.
func resign(t *testing.T, bundle []byte, change func(b map[string]json.RawMessage, r *crypto.Receipt)) []byte {
	t.Helper()
	var b map[string]json.RawMessage
	if err := json.Unmarshal(bundle, &b); err != nil {
		t.Fatal(err)
	}
	signed, err := crypto.DecodeSignedReceipt(b["receipt"])
	if err != nil {
		t.Fatal(err)
	}
	r := signed.Receipt
	change(b, &r)
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	again, err := crypto.SignReceipt(key, r)
	if err != nil {
		t.Fatal(err)
	}
	if b["receipt"], err = json.Marshal(again); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConsoleProofPolicy checks the Proof page's policy checks on real bundles and on
// doctored ones whose digests and signature hold: evidence changed so that the policy
// decides otherwise than the receipt, a reason changed, bytecode that does not load. The
// page names the check intentctl verify names, with its message.
func TestConsoleProofPolicy(t *testing.T) {
	// Not parallel: runs Chromium, whose 5s page waits two browsers at once could miss.
	s := startServer(t, nil)
	b := newConsoleBrowser(t, s)

	bundles := map[string][]byte{}
	for name, solution := range map[string]string{"success": solutionPasses, "failure": solutionBlackL} {
		id := s.submit()
		if r := s.propose(id, solution); r.status != http.StatusOK {
			t.Fatalf("proposal: %s", r)
		}
		s.waitStatus(id, name)
		r := s.do("GET", "/intents/"+id+"/proof", "", nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET proof: %s", r)
		}
		bundles[name] = r.body

		// The page of the decided intent: every check passes, the policy's two included.
		b.open("#/proof/" + id)
		b.wait("the verdict on "+id, `document.getElementById("verdict")`, 10*time.Second)
		if got := b.text("#verdict"); !strings.HasPrefix(got, "verified: the proof of intent "+id+" holds") {
			t.Errorf("the Proof page of the %s %s says %q, want verified", name, id, got)
		}
		for _, check := range []string{"policy", "evaluation"} {
			if got := b.attr(fmt.Sprintf(`li[data-check=%q]`, check), "data-status"); got != "pass" {
				t.Errorf("proof of the %s %s: check %s is %q, want pass", name, id, check, got)
			}
		}
		if name == "failure" {
			if n := b.count("#proof-result dt"); n < 3 {
				t.Errorf("the report of the failure lists %d rows, want its constraint failures among them", n)
			}
		}
	}

	setEvidence := func(ev string) func(map[string]json.RawMessage, *crypto.Receipt) {
		return func(m map[string]json.RawMessage, r *crypto.Receipt) {
			m["evidence"] = json.RawMessage(ev)
			d, err := crypto.Digest(m["evidence"])
			if err != nil {
				t.Fatal(err)
			}
			r.EvidenceDigest = d
		}
	}
	evidenceOf := func(bundle []byte) string {
		var m map[string]json.RawMessage
		json.Unmarshal(bundle, &m)
		return string(m["evidence"])
	}
	outOfStock := strings.Replace(evidenceOf(bundles["success"]), `"in_stock":true`, `"in_stock":false`, 1)
	if outOfStock == evidenceOf(bundles["success"]) {
		t.Fatalf("the evidence has no in_stock to change: %s", outOfStock)
	}
	garbage := []byte("IPOL\x01\x01x\x00\x00\x00\x00\x01\x00\x02\x03\x03")
	doctored := []struct {
		name, check string
		bundle      []byte
	}{
		{"evidence out of stock", proof.CheckEvaluation, resign(t, bundles["success"], setEvidence(outOfStock))},
		{"evidence as a number with a fraction", proof.CheckEvaluation,
			resign(t, bundles["success"], setEvidence(strings.Replace(evidenceOf(bundles["success"]), `"price_cents":1999`, `"price_cents":1999.0`, 1)))},
		{"a reason changed", proof.CheckEvaluation, resign(t, bundles["failure"], func(_ map[string]json.RawMessage, r *crypto.Receipt) {
			r.ConstraintFailures[1].Reason += "."
		})},
		{"a failure kind changed", proof.CheckEvaluation, resign(t, bundles["failure"], func(_ map[string]json.RawMessage, r *crypto.Receipt) {
			r.FailureKind, r.EvidenceMissing = crypto.FailureKindEvidence, []string{"price_cents"}
		})},
		{"bytecode that does not load", proof.CheckPolicy, resign(t, bundles["success"], func(m map[string]json.RawMessage, r *crypto.Receipt) {
			m["policy_bytecode"], _ = json.Marshal(garbage)
			sum := sha256.Sum256(garbage)
			r.PolicyID = crypto.EncodeBase58(sum[:])
		})},
	}
	for i, c := range doctored {
		_, err := proof.Verify(c.bundle, nil)
		ve, ok := err.(*proof.VerifyError)
		if !ok || ve.Check != c.check {
			t.Fatalf("%s: intentctl verify says %v, want the %s check to fail", c.name, err, c.check)
		}
		file := filepath.Join(t.TempDir(), fmt.Sprintf("doctored-%d.json", i))
		if err := os.WriteFile(file, c.bundle, 0o600); err != nil {
			t.Fatal(err)
		}
		b.open("#/proof")
		b.wait("the drop zone", `document.getElementById("bundle-file")`, 5*time.Second)
		// The page may still show the last bundle's verdict: it goes first, so that
		// the wait below is for this bundle's.
		b.eval(`document.getElementById("verdict")?.remove()`, nil)
		b.run(chromedp.SetUploadFiles(chromedp.CSS("#bundle-file"), []string{file}))
		b.wait("the verdict on "+c.name, `document.getElementById("verdict")`, 10*time.Second)
		want := "verification FAILED: check " + c.check + ": " + ve.Message
		if got := b.text("#verdict"); got != want {
			t.Errorf("%s: the page says\n  %q\nwant, as intentctl verify,\n  %q", c.name, got, want)
		}
		if st := b.attr(fmt.Sprintf(`li[data-check=%q]`, c.check), "data-status"); st != "fail" {
			t.Errorf("%s: check %s is %q, want fail", c.name, c.check, st)
		}
		if i == 0 {
			b.screenshot("proof-policy", `document.querySelector('li[data-check="evaluation"]')`)
		}
	}
}
