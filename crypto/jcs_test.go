package crypto

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// The canonical form is what signatures cover, so Canonicalize is held to a second,
// independent implementation of RFC 8785 (gowebpki/jcs, which it replaced for speed):
// on the RFC's own number samples, on 200,000 random doubles, and under fuzzing.

// TestCanonicalNumbers checks the serialization of doubles, the subtle part of RFC 8785,
// against the samples of its appendix B and against the reference on random doubles.
func TestCanonicalNumbers(t *testing.T) {
	samples := []struct {
		bits uint64
		want string // "" for a value JCS has no form for
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x3e7ad7f29abcaf48, "1e-7"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x7ff0000000000000, ""}, // +Inf
	}
	for _, s := range samples {
		f := math.Float64frombits(s.bits)
		in := strconv.FormatFloat(f, 'g', -1, 64)
		if math.IsInf(f, 0) {
			in = "1e400"
		}
		t.Run(in, func(t *testing.T) {
			got, err := Canonicalize([]byte(in))
			if s.want == "" {
				if err == nil {
					t.Fatalf("Canonicalize(%s) = %s, want an error", in, got)
				}
				return
			}
			if err != nil || string(got) != s.want {
				t.Fatalf("Canonicalize(%s) = %s, %v; want %s", in, got, err, s.want)
			}
		})
	}

	t.Run("random doubles", func(t *testing.T) {
		n := 200_000
		if testing.Short() {
			n = 20_000
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range n {
			f := math.Float64frombits(r.Uint64())
			if math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
			in := []byte(strconv.FormatFloat(f, 'g', -1, 64))
			got, err := Canonicalize(in)
			want, werr := jcs.Transform(in)
			if err != nil || werr != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: got %s, %v; the reference gives %s, %v", in, got, err, want, werr)
			}
		}
	})
}

// TestCanonicalizeRefusals covers the texts that have no canonical form.
func TestCanonicalizeRefusals(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"duplicate key", `{"a":1,"a":2}`, `duplicate object member name "a"`},
		{"duplicate after unescaping", `{"a":1,"\u0061":2}`, `duplicate`},
		{"lone surrogate", `{"a":"\ud800"}`, `surrogate`},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", `UTF-8`},
		{"overflowing number", `{"a":[1,-1e400]}`, `-1e400 is beyond the range of a double`},
		{"overflow in a string is text", `{"a":"1e400","b":1.7976931348623157e308}`, ""},
		{"truncated", `{"a":`, `unexpected EOF`},
		{"two values", `{} {}`, `invalid character`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.in))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Canonicalize(%s) = %v, want success", tc.in, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Canonicalize(%s) = %s, %v; want an error containing %q", tc.in, got, err, tc.want)
			}
			if strings.Contains(err.Error(), "jsontext") {
				t.Errorf("error %q names the library", err)
			}
		})
	}
}

// FuzzCanonicalize holds Canonicalize to the reference: whatever it accepts, the
// reference accepts and writes the same bytes; whatever valid UTF-8 JSON the reference
// accepts (it refuses duplicate keys too), it accepts.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{"b":1e21,"a":[1.0,-0,0.000001,1e-7,123456789012345680000,"\u20ac\u0001\/",true,null]}`,
		`{"\ud83d\ude00":3,"\uffff":4,"ﬁ":1,"e":{"z":[],"y":{}}}`,
		` [ 1E2 , "a\"b" ] `,
		`{"a":1,"a":2}`,
		`1e400`,
	} {
		f.Add([]byte(s))
	}
	f.Add(typicalIntent)
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := Canonicalize(in)
		want, werr := jcs.Transform(in)
		if err == nil {
			if werr != nil || !bytes.Equal(got, want) {
				t.Fatalf("%q: got %s; the reference gives %s, %v", in, got, want, werr)
			}
			if again, err := Canonicalize(got); err != nil || !bytes.Equal(again, got) {
				t.Fatalf("%q: canonical form %s is not a fixed point: %s, %v", in, got, again, err)
			}
			return
		}
		if werr == nil && json.Valid(in) && utf8.Valid(in) {
			t.Fatalf("%q: refused (%v) but the reference gives %s", in, err, want)
		}
	})
}
