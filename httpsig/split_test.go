package httpsig

import (
	"testing"

	"github.com/dunglas/httpsfv"
)

// FuzzSplitDictionary holds splitDictionary, which finds the text of each member of a
// Signature-Input, to httpsfv's reading of the same value: for any dictionary httpsfv
// parses, each member's text must parse on its own to the member httpsfv read, so that
// the @signature-params line and what Verify checks cannot differ.
func FuzzSplitDictionary(f *testing.F) {
	for _, s := range []string{
		`sig1=("@method" "@path");created=1;keyid="k"`,
		`a=("x" "y");n="a, b", b=(), c=?1`,
		`a=%"x,\"", b="x,\\\"y", c=?1;d=@12;e=1.5, f=(:AA==: *t)`,
		`a=1 ,	b=2`,
		`a, b;x=1;y="a,b", c`,
		`a=("x";sf "y";key="k,l");t="\"", a=2`,
		`sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := httpsfv.UnmarshalDictionary([]string{s})
		if err != nil {
			return
		}
		members, ok := splitDictionary(s)
		names := d.Names()
		if len(names) == 0 {
			return
		}
		if !ok || len(members) < len(names) {
			t.Fatalf("splitDictionary(%q) = %+v, %v; httpsfv reads %d members", s, members, ok, len(names))
		}
		if len(members) > len(names) {
			return // a key used twice: Verify refuses it
		}
		for i, m := range members {
			if m.key != names[i] {
				t.Fatalf("splitDictionary(%q): member %d is %q, httpsfv says %q", s, i, m.key, names[i])
			}
			text := m.key + "=" + m.value
			if m.bare {
				text = m.key + m.value
			}
			one, err := httpsfv.UnmarshalDictionary([]string{text})
			if err != nil {
				t.Fatalf("splitDictionary(%q): member %q=%q does not parse: %v", s, m.key, m.value, err)
			}
			got, _ := one.Get(m.key)
			want, _ := d.Get(m.key)
			if g, w := marshal(t, got), marshal(t, want); g != w {
				t.Fatalf("splitDictionary(%q): member %q reads %s alone, %s in the whole", s, m.key, g, w)
			}
		}
	})
}

func marshal(t *testing.T, m httpsfv.Member) string {
	l := httpsfv.List{m}
	s, err := httpsfv.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
