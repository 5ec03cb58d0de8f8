package http

import (
	"fmt"
	"strings"
	"testing"

	"github.com/intentd/intentd"
)

func TestLimitsDefaults(t *testing.T) {
	var l Limits
	l.setDefaults()
	want := Limits{MaxSolutionBytes: 16 << 10, MaxAttrs: 128, MaxSetElements: 1024, MaxStringBytes: 4096, MaxPolicySourceBytes: 64 << 10}
	if l != want {
		t.Fatalf("defaults = %+v, want %+v", l, want)
	}
	big := Limits{MaxSolutionBytes: 1 << 21, MaxPolicySourceBytes: 1 << 20}
	big.setDefaults()
	if big.MaxSolutionBytes != intentd.MaxSolutionBytes || big.MaxPolicySourceBytes != 64<<10 {
		t.Fatalf("limits over the core's = %+v, want them lowered to it", big)
	}
	// The engine's cap is the default body limit: a server that keeps its body limit
	// can raise the solution limit to it and no further.
	if intentd.MaxSolutionBytes != DefaultMaxBodyBytes {
		t.Fatalf("intentd.MaxSolutionBytes = %d, want the default body limit %d", intentd.MaxSolutionBytes, DefaultMaxBodyBytes)
	}
}

// intentWith is an intent whose attrs are the given fields.
func intentWith(fields string) []byte {
	return fmt.Appendf(nil, `{"id":"5f0c6a52-3b1e-4a7e-9a51-1b2b8a3c4d5e","policy_id":"93kcNXu64iv6i5ZNxZLZRaTJwgxZzBeLiKNK3kb6KdUb","attrs":{"fields":{%s}}}`, fields)
}

func stringSet(n int) string {
	elems := make([]string, n)
	for i := range elems {
		elems[i] = fmt.Sprintf("%q", fmt.Sprint("e", i))
	}
	return `{"Set":{"String":[` + strings.Join(elems, ",") + `]}}`
}

func intSet(n int) string {
	elems := make([]string, n)
	for i := range elems {
		elems[i] = fmt.Sprint(i % 3) // repeats count: the limit is on what was sent
	}
	return `{"Set":{"Int":[` + strings.Join(elems, ",") + `]}}`
}

func fieldsN(n int) string {
	fs := make([]string, n)
	for i := range fs {
		fs[i] = fmt.Sprintf(`"f%03d":{"Int":%d}`, i, i)
	}
	return strings.Join(fs, ",")
}

func TestCheckIntent(t *testing.T) {
	l := Limits{MaxAttrs: 4, MaxSetElements: 3, MaxStringBytes: 5}
	l.setDefaults()
	tests := []struct {
		name, fields, want string
	}{
		{"fields at the limit", fieldsN(4), ""},
		{"fields over by one", fieldsN(5), "intent.attrs.fields: 5 fields, over the limit of 4"},
		{"string set at the limit", `"c":` + stringSet(3), ""},
		{"string set over by one", `"c":` + stringSet(4), "intent.attrs.fields.c: a set of 4 elements, over the limit of 3"},
		{"int set at the limit", `"c":` + intSet(3), ""},
		{"int set over by one, with repeats", `"c":` + intSet(4), "intent.attrs.fields.c: a set of 4 elements, over the limit of 3"},
		{"string at the limit", `"s":{"String":"abcde"}`, ""},
		{"string over by one", `"s":{"String":"abcdef"}`, "intent.attrs.fields.s: a string of 6 bytes, over the limit of 5"},
		{"multi-byte string at the limit", `"s":{"String":"é€"}`, ""},
		{"multi-byte string over", `"s":{"String":"éé€"}`, "a string of 7 bytes"},
		{"string in a set over", `"c":{"Set":{"String":["ok","toolong"]}}`, "intent.attrs.fields.c: a string of 7 bytes, over the limit of 5"},
		{"first field by name", `"b":{"String":"bbbbbbb"},"a":{"String":"aaaaaaa"}`, "intent.attrs.fields.a:"},
		{"an int is not limited", `"n":{"Int":9007199254740991}`, ""},
	}
	check := func(t *testing.T, raw []byte) error {
		t.Helper()
		in, err := intentd.DecodeIntent(raw)
		if err != nil {
			t.Fatalf("DecodeIntent(%s): %v", raw, err)
		}
		return l.CheckIntent(in)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := check(t, intentWith(tt.fields))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckIntent: %v, want nil", err)
				}
				return
			}
			if err == nil || intentd.ErrorCode(err) != CodeLimitExceeded || intentd.ErrorKind(err) != intentd.KindUnprocessable || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckIntent: %v, want a 422 limit_exceeded saying %q", err, tt.want)
			}
		})
	}
	t.Run("no attrs", func(t *testing.T) {
		raw := `{"id":"5f0c6a52-3b1e-4a7e-9a51-1b2b8a3c4d5e","policy_id":"93kcNXu64iv6i5ZNxZLZRaTJwgxZzBeLiKNK3kb6KdUb"}`
		if err := check(t, []byte(raw)); err != nil {
			t.Errorf("CheckIntent(%s) = %v, want nil", raw, err)
		}
	})
}

func TestCheckSolutionAndPolicySource(t *testing.T) {
	l := Limits{MaxSolutionBytes: 10, MaxPolicySourceBytes: 20}
	l.setDefaults()
	tests := []struct {
		name string
		err  error
		kind intentd.Kind
		code string
	}{
		{"solution at the limit", l.CheckSolution(intentd.Proposal{Solution: strings.Repeat("s", 10)}), 0, ""},
		{"solution over by one", l.CheckSolution(intentd.Proposal{Solution: strings.Repeat("s", 11)}), intentd.KindUnprocessable, intentd.CodeInvalidProposal},
		{"policy at the limit", l.CheckPolicySource([]byte(strings.Repeat("p", 20))), 0, ""},
		{"policy over by one", l.CheckPolicySource([]byte(strings.Repeat("p", 21))), intentd.KindTooLarge, CodePolicyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.code == "" {
				if tt.err != nil {
					t.Fatalf("err = %v, want nil", tt.err)
				}
				return
			}
			if intentd.ErrorKind(tt.err) != tt.kind || intentd.ErrorCode(tt.err) != tt.code || !strings.Contains(tt.err.Error(), "over the limit") {
				t.Fatalf("err = %v, want %s %s", tt.err, tt.kind, tt.code)
			}
		})
	}
}
