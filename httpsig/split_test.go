package httpsig

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/dunglas/httpsfv"
)

// FuzzParseMembers holds parseMembers, which reads a Signature-Input member by member
// from the text of each (with readMember, or httpsfv for the shapes readMember leaves
// to it), to httpsfv's reading of the whole value: it accepts what
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
		`s=( "a"  "b" );x=007;y=-15;z;t=tok:en/1;b=?0;c=?1;*s="q\"\\", t=();a=1;a=2`,
		`sig1=("@method" "@authority" "@path" "content-digest");created=1618884473;expires=1618884773;nonce="n";alg="ed25519";keyid="k";tag="t"`,
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
			if m.key != names[i] || !reflect.DeepEqual(m.sig, fromHTTPSFV(want)) {
				t.Fatalf("parseMembers(%q): member %d is %s=%+v, httpsfv reads %s=%+v", s, i, m.key, m.sig, names[i], fromHTTPSFV(want))
			}
		}
	})
}

// FuzzReadBytesMember holds readBytesMember, the reader of a Signature or
// Content-Digest header sent as one member, to httpsfv: whatever it reads, httpsfv
// reads as the same byte sequence under the same key.
func FuzzReadBytesMember(f *testing.F) {
	for _, s := range [][2]string{
		{"sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:", "sha-256"},
		{"sig1=:AAAA:", "sig1"},
		{"sig1=:AAAA:;x=1", "sig1"},
		{"sig1=:AA=A:", "sig1"},
		{"sig1=::", "sig1"},
		{" sig1=:AAAA:", "sig1"},
		{"sig1=:AAAA:, sig2=:BBBB:", "sig1"},
		{"Sig1=:AAAA:", "Sig1"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, value, key string) {
		got, ok := readBytesMember([]string{value}, key)
		if !ok {
			return
		}
		d, err := httpsfv.UnmarshalDictionary([]string{value})
		if err != nil {
			t.Fatalf("readBytesMember(%q, %q) reads %x, httpsfv refuses it: %v", value, key, got, err)
		}
		m, found := d.Get(key)
		item, isItem := m.(httpsfv.Item)
		want, isBytes := item.Value.([]byte)
		if !found || !isItem || !isBytes || !bytes.Equal(got, want) {
			t.Fatalf("readBytesMember(%q, %q) reads %x, httpsfv %#v", value, key, got, m)
		}
	})
}
