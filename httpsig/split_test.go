package httpsig

import (
	"testing"

	"github.com/dunglas/httpsfv"
)

// FuzzParseMembers holds parseMembers, which reads a Signature-Input member by member
// from the text of each, to httpsfv's reading of the whole value: it accepts what
// httpsfv accepts (but for a key used twice, which it refuses) and refuses what httpsfv
// refuses, and each member it reads from its own text is the member httpsfv reads in
// the whole. So the @signature-params line, which is that text, and what Verify
// checks cannot differ.
func FuzzParseMembers(f *testing.F) {
	for _, s := range []string{
		`sig1=("@method" "@path");created=1;keyid="k"`,
		`a=("x" "y");n="a, b", b=(), c=?1`,
		`a=%"x,\"", b="x,\\\"y", c=?1;d=@12;e=1.5, f=(:AA==: *t)`,
		`a=1 ,	b=2`,
		`a, b;x=1;y="a,b", c`,
		`a=("x";sf "y";key="k,l");t="\"", a=2`,
		`a=1,`,
		"\ta=1",
		`a=1 x`,
		``,
		`sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, derr := httpsfv.UnmarshalDictionary([]string{s})
		members, merr := parseMembers(s)
		if derr != nil {
			if merr == nil {
				t.Fatalf("parseMembers(%q) accepts what httpsfv refuses (%v): %+v", s, derr, members)
			}
			return
		}
		names := d.Names()
		if merr != nil {
			if split, ok := splitDictionary(s); ok && len(split) > len(names) {
				return // a key used twice
			}
			t.Fatalf("parseMembers(%q) refuses what httpsfv reads: %v", s, merr)
		}
		if len(members) != len(names) {
			t.Fatalf("parseMembers(%q) reads %d members, httpsfv %d", s, len(members), len(names))
		}
		for i, m := range members {
			want, _ := d.Get(names[i])
			if m.key != names[i] || marshal(t, m.parsed) != marshal(t, want) {
				t.Fatalf("parseMembers(%q): member %d is %s=%s, httpsfv reads %s=%s", s, i, m.key, marshal(t, m.parsed), names[i], marshal(t, want))
			}
		}
	})
}

func marshal(t *testing.T, m httpsfv.Member) string {
	s, err := httpsfv.Marshal(httpsfv.List{m})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
