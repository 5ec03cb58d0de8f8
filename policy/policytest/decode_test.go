package policytest

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/policy"
)

// caseJSON is a valid case of a failure, whose members the tests below change one at a
// time.
const caseJSON = `{"name": "over budget",
  "attrs": {"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": ["navy", "blue"]}}, "max": {"Int": 3000}}},
  "evidence": {"size": "M", "price": 3499, "in_stock": true, "tags": ["a", 2, false, null], "note": null},
  "mandate": {"spent": 100, "purchases": 1, "period_spent": 50, "period_purchases": 1},
  "decision": {"time": "2026-11-23T10:00:00+01:00"},
  "expect": "failure", "failing": [4, 1], "failure_kind": "constraints"}`

func TestDecode(t *testing.T) {
	cases, err := Decode([]byte("[" + caseJSON + "]"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 1 {
		t.Fatalf("%d cases, want 1", len(cases))
	}
	c := cases[0]
	want := Case{
		Name: "over budget",
		Attrs: policy.Attrs{"size": policy.StringValue("M"), "colors": policy.StringSetValue("navy", "blue"),
			"max": policy.IntValue(3000)},
		Evidence: map[string]any{"size": "M", "price": json.Number("3499"), "in_stock": true,
			"tags": []any{"a", json.Number("2"), false, nil}, "note": nil},
		Context: policy.Context{Spent: 100, Purchases: 1, PeriodSpent: 50, PeriodPurchases: 1,
			Time: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)},
		Expect: Failure, Failing: []int{1, 4}, FailureKind: KindConstraints,
	}
	if !c.Context.Time.Equal(want.Context.Time) {
		t.Errorf("time %v, want %v", c.Context.Time, want.Context.Time)
	}
	c.Context.Time, want.Context.Time = time.Time{}, time.Time{}
	attrs, _ := json.Marshal(c.Attrs)
	wantAttrs, _ := json.Marshal(want.Attrs)
	if string(attrs) != string(wantAttrs) {
		t.Errorf("attrs %s, want %s", attrs, wantAttrs)
	}
	c.Attrs, want.Attrs = nil, nil
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %#v\nwant %#v", c, want)
	}
}

func TestDecodeMinimal(t *testing.T) {
	cases, err := Decode([]byte(`[{"name": "a", "evidence": {}, "expect": "success"},
		{"name": "b", "evidence": {"tags": []}, "expect": "failure", "failing": [0]}]`))
	if err != nil {
		t.Fatal(err)
	}
	if cases[0].Attrs != nil || len(cases[0].Evidence) != 0 || !cases[0].Context.Time.IsZero() || cases[0].FailureKind != "" {
		t.Errorf("case a: %#v", cases[0])
	}
	if tags, ok := cases[1].Evidence["tags"].([]any); !ok || len(tags) != 0 {
		t.Errorf("case b: an empty array decodes as %#v, want []any{}", cases[1].Evidence["tags"])
	}
}

// TestDecodeRefuses names, for each kind of bad test file, the path and the words of
// its refusal.
func TestDecodeRefuses(t *testing.T) {
	// with replaces one member of caseJSON, or adds it.
	with := func(member, value string) string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(caseJSON), &m); err != nil {
			t.Fatal(err)
		}
		if value == "" {
			delete(m, member)
		} else {
			m[member] = json.RawMessage(value)
		}
		b, _ := json.Marshal(m)
		return "[" + string(b) + "]"
	}
	tests := []struct {
		name, in, want string
	}{
		{"not JSON", `[{"name": }]`, "not valid JSON: missing value after object name"},
		{"trailing data", `[] []`, "not valid JSON: data after the value"},
		{"an object", `{"cases": []}`, "want a JSON array of cases, got object"},
		{"no cases", `[]`, "no cases: want an array of at least one case"},
		{"a case not an object", `[1]`, "[0]: must be a JSON object, got number"},
		{"unknown member", with("expected", `"success"`), `[0].expected: unknown member (a case has name, attrs,`},
		{"repeated member", `[{"name": "a", "name": "b", "evidence": {}, "expect": "success"}]`, "[0].name: duplicate key"},
		{"missing name", with("name", ""), "[0].name: missing: every case has a name"},
		{"empty name", with("name", `" "`), "[0].name: empty"},
		{"name not a string", with("name", `7`), "[0].name: want a string, got number 7"},
		{"repeated name", "[" + caseJSON + "," + caseJSON + "]", `[1].name: "over budget" names case [0] too`},
		{"missing evidence", with("evidence", ""), "[0].evidence: missing: the evidence to evaluate"},
		{"evidence an array", with("evidence", `[]`), "[0].evidence: must be a JSON object, got array"},
		{"nested evidence", with("evidence", `{"a": {"b": 1}}`), "[0].evidence.a: a value of evidence is a string, a number, a boolean or null (evidence is flat), got object"},
		{"nested evidence array", with("evidence", `{"a": [1, [2]]}`), "[0].evidence.a[1]: an array's element of evidence is"},
		{"repeated evidence field", with("evidence", `{"a": 1, "a": 2}`), "[0].evidence.a: duplicate key"},
		{"attrs not wire form", with("attrs", `{"size": "M"}`), "[0].attrs.size: unknown key (an ObjectValue has only fields)"},
		{"attrs bad value", with("attrs", `{"fields": {"max": {"Int": 1.5}}}`), "[0].attrs.fields.max.Int: want an integer, got 1.5"},
		{"missing expect", with("expect", ""), `[0].expect: missing: the outcome expected, "success" or "failure"`},
		{"bad expect", with("expect", `"fail"`), `[0].expect: want "success" or "failure", got "fail"`},
		{"failure without failing", with("failing", ""), "[0].failing: missing: a case that expects failure lists"},
		{"failure with none failing", with("failing", `[]`), "[0].failing: empty"},
		{"failing not an array", with("failing", `4`), "[0].failing: must be a JSON array, got number"},
		{"failing repeated", with("failing", `[4, 1, 4]`), "[0].failing[2]: constraint 4 is listed twice"},
		{"failing negative", with("failing", `[-1]`), "[0].failing[0]: -1 is not a constraint index (0 to 255)"},
		{"failing past the limit", with("failing", `[256]`), "[0].failing[0]: 256 is not a constraint index"},
		{"failing a fraction", with("failing", `[1.0]`), "[0].failing[0]: want an integer, got 1.0 (a number with a fraction or an exponent)"},
		{"bad kind", with("failure_kind", `"extraction"`), `[0].failure_kind: want "constraints" or "evidence", got "extraction"`},
		{"success with failing", `[{"name": "a", "evidence": {}, "expect": "success", "failing": [1]}]`, "[0].failing: a case that expects success has no failing constraints"},
		{"success with a kind", `[{"name": "a", "evidence": {}, "expect": "success", "failure_kind": "evidence"}]`, "[0].failure_kind: a case that expects success has no failure kind"},
		{"unknown total", with("mandate", `{"total": 1}`), "[0].mandate.total: unknown member (the mandate's totals are spent,"},
		{"negative total", with("mandate", `{"spent": -1}`), "[0].mandate.spent: -1 is negative"},
		{"total too large", with("mandate", `{"spent": 9223372036854775808}`), "[0].mandate.spent: want an integer, got 9223372036854775808 (out of the int64 range)"},
		{"total a string", with("mandate", `{"spent": "1"}`), `[0].mandate.spent: want an integer, got string "1"`},
		{"unknown decision member", with("decision", `{"at": "2026-11-23T10:00:00Z"}`), "[0].decision.at: unknown member (a decision has time)"},
		{"time not RFC 3339", with("decision", `{"time": "23 Nov 2026"}`), `[0].decision.time: want an RFC 3339 time such as 2026-11-23T10:00:00Z, got "23 Nov 2026"`},
		{"time a number", with("decision", `{"time": 1795000000}`), "[0].decision.time: want a string, got number 1795000000"},
		{"too deep", "[" + strings.Repeat("[", 20) + strings.Repeat("]", 20) + "]", "nested more than 8 levels deep"},
		{"invalid UTF-8", "[{\"name\": \"\xff\"}]", "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cases, err := Decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("decoded %#v, want an error containing %q", cases, tt.want)
			}
			var fe *policy.FieldError
			if !errors.As(err, &fe) {
				t.Errorf("error %T, want a *policy.FieldError: %v", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}
