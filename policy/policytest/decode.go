package policytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/intentd/intentd/internal/strictjson"
	"github.com/intentd/intentd/policy"
)

// Limits of a test file: it is written by hand, but a decoder of outside input bounds
// what it holds.
const (
	// maxCaseMembers bounds the members of a case: one more than the eight it may
	// have, so that the member too many is named as unknown rather than counted.
	maxCaseMembers = 9
	// MaxEvidenceFields bounds the fields of a case's evidence. An extractor may return
	// more fields than the policy reads, but not more than a policy could declare
	// several times over.
	MaxEvidenceFields = 4 * policy.MaxEvidence
	// maxDepth bounds the nesting of a test file: a list of cases, each an object whose
	// attrs nest four deep (attrs, fields, a value, a set).
	maxDepth = 8
)

// Decode reads a test file: a JSON array of cases, each an object with exactly the
// members the format names (an unknown member, a repeated one, a value of the wrong
// type or out of range is refused). The error, a *policy.FieldError, names the path of
// the bad value: "[2].evidence.price_cents", "[0].attrs.fields.size.String".
func Decode(data []byte) ([]Case, error) {
	if _, err := strictjson.ReadValue(data, maxDepth); err != nil {
		return nil, fieldError(err)
	}
	var cases []Case
	names := map[string]int{}
	err := strictjson.Elements(data, "", func(i int, v jsontext.Value) error {
		path := strictjson.Index("", i)
		c, err := decodeCase(v, path)
		if err != nil {
			return err
		}
		if first, ok := names[c.Name]; ok {
			return &policy.FieldError{Field: path + ".name", Reason: fmt.Sprintf("%q names case [%d] too: each case has a name of its own", c.Name, first)}
		}
		names[c.Name] = i
		cases = append(cases, c)
		return nil
	})
	if err != nil {
		return nil, fieldError(err)
	}
	if len(cases) == 0 {
		return nil, &policy.FieldError{Reason: "no cases: want an array of at least one case"}
	}
	return cases, nil
}

// fieldError words a refusal of the reader as a FieldError; the refusals of the
// members' own checks are FieldErrors already.
func fieldError(err error) error {
	var e *strictjson.Error
	if !errors.As(err, &e) {
		return err
	}
	if e.Fault == strictjson.NotArray && e.Path == "" {
		return &policy.FieldError{Reason: "want a JSON array of cases, got " + strictjson.KindName(e.Kind)}
	}
	return &policy.FieldError{Field: e.Path, Reason: e.Reason()}
}

// caseReader reads the members of one case at path.
type caseReader struct {
	path       string
	c          Case
	seen       map[string]bool
	hasFailing bool
}

func decodeCase(v jsontext.Value, path string) (Case, error) {
	r := &caseReader{path: path, seen: map[string]bool{}}
	err := strictjson.Members(v, path, maxCaseMembers, func(m strictjson.Member) error {
		r.seen[m.Name] = true
		return r.member(m)
	})
	if err != nil {
		return Case{}, err
	}
	return r.c, r.check()
}

func (r *caseReader) member(m strictjson.Member) error {
	p := strictjson.Join(r.path, m.Name)
	var err error
	switch m.Name {
	case "name":
		r.c.Name, err = readString(m.Value, p)
		if err == nil && strings.TrimSpace(r.c.Name) == "" {
			err = &policy.FieldError{Field: p, Reason: "empty: name the case, for its reports"}
		}
	case "attrs":
		r.c.Attrs, err = readAttrs(m.Value, p)
	case "evidence":
		r.c.Evidence, err = readEvidence(m.Value, p)
	case "mandate":
		err = readMandate(m.Value, p, &r.c.Context)
	case "decision":
		err = readDecision(m.Value, p, &r.c.Context)
	case "expect":
		r.c.Expect, err = readEnum(m.Value, p, Success, Failure)
	case "failing":
		r.hasFailing = true
		r.c.Failing, err = readIndexes(m.Value, p)
	case "failure_kind":
		r.c.FailureKind, err = readEnum(m.Value, p, KindConstraints, KindEvidence)
	default:
		err = &policy.FieldError{Field: p, Reason: "unknown member (a case has name, attrs, evidence, mandate, decision, expect, failing and failure_kind)"}
	}
	return err
}

// check refuses a case whose members do not make one test: what is required, and an
// expectation that contradicts itself.
func (r *caseReader) check() error {
	for _, name := range []string{"name", "evidence", "expect"} {
		if !r.seen[name] {
			return &policy.FieldError{Field: strictjson.Join(r.path, name), Reason: "missing: " + required[name]}
		}
	}
	switch {
	case r.c.Expect == Success && len(r.c.Failing) > 0:
		return &policy.FieldError{Field: r.path + ".failing", Reason: "a case that expects success has no failing constraints"}
	case r.c.Expect == Success && r.c.FailureKind != "":
		return &policy.FieldError{Field: r.path + ".failure_kind", Reason: "a case that expects success has no failure kind"}
	case r.c.Expect == Failure && !r.hasFailing:
		return &policy.FieldError{Field: r.path + ".failing", Reason: "missing: a case that expects failure lists the indexes of the constraints that fail"}
	case r.c.Expect == Failure && len(r.c.Failing) == 0:
		return &policy.FieldError{Field: r.path + ".failing", Reason: "empty: a case that expects failure lists at least one constraint"}
	}
	return nil
}

// required says what each required member is, for the error that finds it missing.
var required = map[string]string{
	"name":     "every case has a name, for its reports",
	"evidence": `the evidence to evaluate, a JSON object ({} for none)`,
	"expect":   `the outcome expected, "success" or "failure"`,
}

func readString(v jsontext.Value, path string) (string, error) {
	if v.Kind() != '"' {
		return "", &policy.FieldError{Field: path, Reason: "want a string, got " + describe(v)}
	}
	b, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return "", &policy.FieldError{Field: path, Reason: "invalid string: " + strings.TrimPrefix(err.Error(), "jsontext: ")}
	}
	return string(b), nil
}

// readEnum reads a string that must be one of want.
func readEnum(v jsontext.Value, path string, want ...string) (string, error) {
	s, err := readString(v, path)
	if err != nil {
		return "", err
	}
	if !slices.Contains(want, s) {
		return "", &policy.FieldError{Field: path, Reason: fmt.Sprintf("want %s, got %s", quoteList(want), strconv.Quote(s))}
	}
	return s, nil
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// readInt reads an integer in the int64 range, written without fraction or exponent.
func readInt(v jsontext.Value, path string) (int64, error) {
	if v.Kind() != '0' {
		return 0, &policy.FieldError{Field: path, Reason: "want an integer, got " + describe(v)}
	}
	s := string(v)
	if strings.ContainsAny(s, ".eE") {
		return 0, &policy.FieldError{Field: path, Reason: "want an integer, got " + s + " (a number with a fraction or an exponent)"}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, &policy.FieldError{Field: path, Reason: "want an integer, got " + s + " (out of the int64 range)"}
	}
	return n, nil
}

// readAttrs reads an intent's attrs in their wire form, as the service reads them,
// and names the bad value by its path in the file.
func readAttrs(v jsontext.Value, path string) (policy.Attrs, error) {
	a, err := policy.DecodeAttrs(v)
	if err != nil {
		var fe *policy.FieldError
		if errors.As(err, &fe) {
			return nil, &policy.FieldError{Field: strictjson.Join(path, fe.Field), Reason: fe.Reason}
		}
		return nil, &policy.FieldError{Field: path, Reason: err.Error()}
	}
	return a, nil
}

// readEvidence reads a flat JSON object as an extractor returns it: each value a
// string, a number (kept as json.Number, as the engine keeps it), a boolean, null, or
// an array of those. A nested object or array is refused: evidence is flat, and a
// policy has no way to read inside one.
func readEvidence(v jsontext.Value, path string) (map[string]any, error) {
	ev := map[string]any{}
	err := strictjson.Members(v, path, MaxEvidenceFields, func(m strictjson.Member) error {
		p := strictjson.Join(path, m.Name)
		if m.Value.Kind() == '[' {
			var elems []any
			err := strictjson.Elements(m.Value, p, func(i int, e jsontext.Value) error {
				x, err := readScalar(e, strictjson.Index(p, i), "an array's element")
				elems = append(elems, x)
				return err
			})
			if elems == nil {
				elems = []any{}
			}
			ev[m.Name] = elems
			return err
		}
		x, err := readScalar(m.Value, p, "a value")
		ev[m.Name] = x
		return err
	})
	if err != nil {
		return nil, err
	}
	return ev, nil
}

// readScalar reads one evidence value that is not an array.
func readScalar(v jsontext.Value, path, what string) (any, error) {
	switch v.Kind() {
	case '"':
		return readString(v, path)
	case '0':
		// Kept as written, as a decoder with UseNumber keeps it: the policy decides
		// whether it is an integer.
		return json.Number(v), nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'n':
		return nil, nil
	}
	return nil, &policy.FieldError{Field: path, Reason: fmt.Sprintf("%s of evidence is a string, a number, a boolean or null (evidence is flat), got %s", what, describe(v))}
}

// readMandate reads the mandate's totals before the purchase.
func readMandate(v jsontext.Value, path string, c *policy.Context) error {
	return strictjson.Members(v, path, 5, func(m strictjson.Member) error {
		p := strictjson.Join(path, m.Name)
		var dst *int64
		switch m.Name {
		case "spent":
			dst = &c.Spent
		case "purchases":
			dst = &c.Purchases
		case "period_spent":
			dst = &c.PeriodSpent
		case "period_purchases":
			dst = &c.PeriodPurchases
		default:
			return &policy.FieldError{Field: p, Reason: "unknown member (the mandate's totals are spent, purchases, period_spent and period_purchases)"}
		}
		n, err := readInt(m.Value, p)
		if err == nil && n < 0 {
			err = &policy.FieldError{Field: p, Reason: fmt.Sprintf("%d is negative: a mandate's totals are never below 0", n)}
		}
		*dst = n
		return err
	})
}

// readDecision reads the decision's context: its time.
func readDecision(v jsontext.Value, path string, c *policy.Context) error {
	return strictjson.Members(v, path, 2, func(m strictjson.Member) error {
		p := strictjson.Join(path, m.Name)
		if m.Name != "time" {
			return &policy.FieldError{Field: p, Reason: "unknown member (a decision has time)"}
		}
		s, err := readString(m.Value, p)
		if err != nil {
			return err
		}
		t, err := time.Parse(decisionTime, s)
		if err != nil || t.IsZero() {
			return &policy.FieldError{Field: p, Reason: fmt.Sprintf("want an RFC 3339 time such as 2026-11-23T10:00:00Z, got %s", strconv.Quote(s))}
		}
		c.Time = t
		return nil
	})
}

// readIndexes reads constraint indexes: integers from 0, each once, returned sorted.
func readIndexes(v jsontext.Value, path string) ([]int, error) {
	var out []int
	err := strictjson.Elements(v, path, func(i int, e jsontext.Value) error {
		p := strictjson.Index(path, i)
		n, err := readInt(e, p)
		if err != nil {
			return err
		}
		if n < 0 || n >= policy.MaxConstraints {
			return &policy.FieldError{Field: p, Reason: fmt.Sprintf("%d is not a constraint index (0 to %d)", n, policy.MaxConstraints-1)}
		}
		if slices.Contains(out, int(n)) {
			return &policy.FieldError{Field: p, Reason: fmt.Sprintf("constraint %d is listed twice", n)}
		}
		out = append(out, int(n))
		return nil
	})
	slices.Sort(out)
	return out, err
}

// describe names the kind of a JSON value for a "got ..." message.
func describe(v jsontext.Value) string {
	switch k := v.Kind(); k {
	case '"', '0':
		s := string(v)
		if len(s) > 40 {
			cut := 37
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			s = s[:cut] + "..."
		}
		return strictjson.KindName(k) + " " + s
	case 't', 'f':
		return "boolean " + string(v)
	default:
		return strictjson.KindName(k)
	}
}
