package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// collect reads the members of data with Members.
func collect(data []byte, path string, max int) ([]Member, error) {
	var ms []Member
	err := Members(data, path, max, func(m Member) error {
		ms = append(ms, m)
		return nil
	})
	return ms, err
}

func TestMembers(t *testing.T) {
	ms, err := collect([]byte(" {\"b\" : [1, {\"x\":1,\"x\":2}],\n\"a\":\"\\u00e9\", \"\\u0063\":null} "), "", 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Member{{"b", jsontext.Value(`[1, {"x":1,"x":2}]`)}, {"a", jsontext.Value(`"\u00e9"`)}, {"c", jsontext.Value(`null`)}}
	if len(ms) != len(want) {
		t.Fatalf("got %d members, want %d", len(ms), len(want))
	}
	for i := range want {
		if ms[i].Name != want[i].Name || !bytes.Equal(ms[i].Value, want[i].Value) {
			t.Errorf("member %d: %q %s, want %q %s", i, ms[i].Name, ms[i].Value, want[i].Name, want[i].Value)
		}
	}
	// A value is a slice of the text and cannot be appended into the rest of it.
	if cap(ms[0].Value) != len(ms[0].Value) {
		t.Errorf("value capacity %d over its length %d", cap(ms[0].Value), len(ms[0].Value))
	}
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		name, text string
		max        int
		fault      Fault
		path       string
		message    string
	}{
		{"empty", ``, 4, Truncated, "intent", "intent: not valid JSON: unexpected EOF"},
		{"white space", " \n", 4, Truncated, "intent", ""},
		{"truncated", `{"a":`, 4, Truncated, "intent.a", ""},
		{"bad character", `{"a":1,}`, 4, Syntax, "intent", "intent: not valid JSON: invalid character ',' at start of value after offset 6"},
		{"two values", `{} {}`, 4, Trailing, "intent", "intent: not valid JSON: data after the value"},
		{"garbage after", `{} x`, 4, Trailing, "intent", ""},
		{"invalid UTF-8 in a value", "{\"a\":\"\xc0\xaf\"}", 4, InvalidUTF8, "intent.a", ""},
		{"invalid UTF-8 in a name", "{\"\xff\":1}", 4, InvalidUTF8, "intent", ""},
		{"lone high surrogate", `{"a":"\ud800"}`, 4, LoneSurrogate, "intent.a", ""},
		{"high surrogate then a letter", `{"a":"\uD800\u0041"}`, 4, LoneSurrogate, "intent.a", ""},
		{"lone low surrogate", `{"a":"x\udc00"}`, 4, LoneSurrogate, "intent.a", ""},
		{"not an object", `[1]`, 4, NotObject, "intent", "intent: must be a JSON object, got array"},
		{"null", `null`, 4, NotObject, "intent", ""},
		{"duplicate", `{"a":1,"b":2,"a":3}`, 4, Duplicate, "intent.a", "intent.a: duplicate key"},
		{"duplicate through an escape", `{"a":1,"\u0061":3}`, 4, Duplicate, "intent.a", ""},
		{"too many", `{"a":1,"b":2,"c":3}`, 2, TooMany, "intent", "intent: more than 2 members"},
		// The text is refused as not JSON whatever came before the fault in it.
		{"duplicate, then not JSON", `{"a":1,"a":2,`, 4, Truncated, "intent", ""},
		{"too many, then not UTF-8", "{\"a\":1,\"b\":2,\"c\":[\"\xff\"]}", 1, InvalidUTF8, "intent", ""},
		{"not an object, then not JSON", `[1,}`, 4, Syntax, "intent", ""},
		{"not an object, then a surrogate", `"\udc00"`, 4, LoneSurrogate, "intent", ""},
		{"too many, then data after", `{"a":1,"b":2} {}`, 1, Trailing, "intent", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := collect([]byte(tt.text), "intent", tt.max)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if e.Fault != tt.fault || e.Path != tt.path {
				t.Fatalf("fault %d at %q (%v), want %d at %q", e.Fault, e.Path, err, tt.fault, tt.path)
			}
			if tt.message != "" && err.Error() != tt.message {
				t.Fatalf("message %q, want %q", err, tt.message)
			}
			if e.NotJSON() == jsontext.Value(tt.text).IsValid(jsontext.AllowDuplicateNames(true)) {
				t.Fatalf("NotJSON() = %v for %q", e.NotJSON(), tt.text)
			}
		})
	}
}

func TestLoneSurrogateEscape(t *testing.T) {
	for text, want := range map[string]string{
		`{"a":"\ud800"}`:             `\ud800`,
		`{"a":"\uD800\u0041"}`:       `\uD800`,
		`{"a":"\ud800\ud800"}`:       `\ud800`,
		`{"a":"ok \udc00"}`:          `\udc00`,
		`{"\udfff":1}`:               `\udfff`,
		`{"a":"\ud83d\ude00\ud83d"}`: `\ud83d`,
	} {
		_, err := collect([]byte(text), "", 4)
		var e *Error
		if !errors.As(err, &e) || e.Fault != LoneSurrogate || e.Escape != want {
			t.Errorf("%s: %v (%+v), want the lone surrogate %s", text, err, e, want)
		}
	}
}

func TestCallbackRefusal(t *testing.T) {
	stop := errors.New("stop")
	seen := 0
	err := Members([]byte(`{"a":1,"b":2,"c":3}`), "", 8, func(m Member) error {
		seen++
		if m.Name == "b" {
			return stop
		}
		return nil
	})
	if err != stop || seen != 2 {
		t.Fatalf("err %v after %d members, want stop after 2", err, seen)
	}
	// Text that is not JSON wins over the callback's refusal.
	err = Members([]byte(`{"a":1,"b":2,"c":`), "", 8, func(Member) error { return stop })
	if e, ok := err.(*Error); !ok || e.Fault != Truncated {
		t.Fatalf("err %v, want the truncated text", err)
	}
}

func TestDecoder(t *testing.T) {
	d := NewDecoder([]byte(`{"a":{"b":[{"c":1},{"c":2,"c":3}]}}`))
	defer d.Release()
	var walk func(path string) error
	walk = func(path string) error {
		switch d.PeekKind() {
		case '{':
			return d.Object(path, 4, func(name string) error { return walk(Join(path, name)) })
		case '[':
			return d.Array(path, func(i int) error { return walk(Index(path, i)) })
		}
		_, err := d.Token(path)
		return err
	}
	err := walk("x")
	var e *Error
	if !errors.As(err, &e) || e.Fault != Duplicate || e.Path != "x.a.b[1].c" {
		t.Fatalf("err %v, want a duplicate at x.a.b[1].c", err)
	}
}

func TestDecoderEnd(t *testing.T) {
	for text, ok := range map[string]bool{`1`: true, "1 \n": true, `1 2`: false, `1 x`: false, `1 "`: false} {
		d := NewDecoder([]byte(text))
		if _, err := d.Value(""); err != nil {
			t.Fatal(err)
		}
		err := d.End("")
		d.Release()
		if (err == nil) != ok {
			t.Errorf("%q: End = %v", text, err)
		}
	}
}

func TestReadValue(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		text  string
		fault Fault
	}{
		{` "x" `, 0},
		{` {"a":[1,{"b":null}]}` + "\n", 0},
		{deep(32), 0},
		{deep(33), TooDeep},
		{`{"a":1,"a":2}`, 0}, // repeated names are the walk's to refuse
		{`1 2`, Trailing},
		{`[1,`, Truncated},
		{"\"\xff\"", InvalidUTF8},
	}
	for _, tt := range tests {
		v, err := ReadValue([]byte(tt.text), 32)
		if tt.fault == 0 {
			if err != nil || string(v) != strings.TrimSpace(tt.text) {
				t.Errorf("%.40q: %q, %v", tt.text, v, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Fault != tt.fault || e.Path != "" {
			t.Errorf("%.40q: %v, want fault %d", tt.text, err, tt.fault)
		}
	}
	if _, err := ReadValue([]byte(deep(40)), 32); err == nil || err.Error() != "nested more than 32 levels deep" {
		t.Errorf("too deep: %v", err)
	}
}

func TestElements(t *testing.T) {
	var got []string
	err := Elements([]byte(`[1, "a", {"b":2}]`), "s", func(i int, v jsontext.Value) error {
		got = append(got, Index("s", i)+"="+string(v))
		return nil
	})
	if err != nil || strings.Join(got, " ") != `s[0]=1 s[1]="a" s[2]={"b":2}` {
		t.Fatalf("%v, %v", got, err)
	}
	err = Elements([]byte(`{}`), "s", func(int, jsontext.Value) error { return nil })
	if e, ok := err.(*Error); !ok || e.Fault != NotArray || e.Kind != '{' {
		t.Fatalf("object for an array: %v", err)
	}
}

func TestUnmarshal(t *testing.T) {
	type shape struct {
		Raw   jsontext.Value `json:"raw"`
		Bytes []byte         `json:"bytes"`
		Inner struct {
			N int `json:"n"`
		} `json:"inner"`
	}
	var s shape
	if err := Unmarshal([]byte(`{"raw":{"x":[1]},"bytes":"AAE=","inner":{"n":3}}`), &s); err != nil {
		t.Fatal(err)
	}
	if string(s.Raw) != `{"x":[1]}` || !bytes.Equal(s.Bytes, []byte{0, 1}) || s.Inner.N != 3 {
		t.Fatalf("decoded %+v", s)
	}
	for text, want := range map[string]string{
		`{"note":1}`:         `unknown field "note"`,
		`{"Raw":1}`:          `unknown field "Raw"`,
		`{"inner":{"m":1}}`:  `inner: unknown field "m"`,
		`{"bytes":"***"}`:    `illegal base64 data at input byte 0`,
		`{"raw":1,"raw":2}`:  `duplicate`,
		`{"raw":1} {}`:       `after top-level value`,
		"{\"raw\":\"\xff\"}": `invalid UTF-8`,
		`{"raw":"\ud800"}`:   `surrogate`,
	} {
		var s shape
		if err := Unmarshal([]byte(text), &s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", text, err, want)
		}
	}
}

// oracle reads the top-level members of data with jsontext alone.
func oracle(data []byte) (names []string, values []jsontext.Value, valid, object bool) {
	if !jsontext.Value(data).IsValid(jsontext.AllowDuplicateNames(true)) {
		return nil, nil, false, false
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))
	if t, _ := dec.ReadToken(); t.Kind() != '{' {
		return nil, nil, true, false
	}
	for dec.PeekKind() != '}' {
		t, _ := dec.ReadToken()
		names = append(names, t.String())
		v, _ := dec.ReadValue()
		values = append(values, v.Clone())
	}
	return names, values, true, true
}

// canonical is the JCS form of v, with repeated names let through below the top.
func canonical(v []byte) ([]byte, error) {
	c := jsontext.Value(bytes.Clone(v))
	err := c.Canonicalize(jsontext.AllowDuplicateNames(true))
	return c, err
}

// FuzzMembers: text that is not JSON is refused as such and only it; an object with a
// repeated name, or more members than the limit, is always refused, the first such
// member named; and what is accepted is the object, member for member: re-encoded from
// the members, it has the same canonical form as the text.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,null],"c":{"d":"\u00e9"}}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`,
		`{}`, `[]`, `"x"`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":1} {}`, `{"a":`, ``,
		`{"a":{"b":1,"b":2}}`, `{"":0,"":1}`, `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"a":0}`,
	} {
		f.Add([]byte(s), uint8(4))
	}
	f.Fuzz(func(t *testing.T, data []byte, max uint8) {
		ms, err := collect(data, "", int(max))
		names, values, valid, object := oracle(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%T %v is not an *Error", err, err)
			}
			if e.NotJSON() == valid {
				t.Fatalf("%q: fault %d (%v), but jsontext says valid = %v", data, e.Fault, err, valid)
			}
			if valid && !object && e.Fault != NotObject {
				t.Fatalf("%q: %v, want it refused as not an object", data, err)
			}
			if object {
				want := firstFault(names, int(max))
				if want.Fault != e.Fault || want.Path != e.Path {
					t.Fatalf("%q: %v, want %v", data, err, want)
				}
			}
			return
		}
		if !object {
			t.Fatalf("%q accepted; jsontext says valid = %v, object = %v", data, valid, object)
		}
		if want := firstFault(names, int(max)); want != nil {
			t.Fatalf("%q accepted, want %v", data, want)
		}
		if len(ms) != len(names) {
			t.Fatalf("%d members, want %d", len(ms), len(names))
		}
		var b bytes.Buffer
		b.WriteByte('{')
		for i, m := range ms {
			if m.Name != names[i] || !bytes.Equal(m.Value, values[i]) {
				t.Fatalf("member %d is %q %s, want %q %s", i, m.Name, m.Value, names[i], values[i])
			}
			if i > 0 {
				b.WriteByte(',')
			}
			q, err := jsontext.AppendQuote(nil, m.Name)
			if err != nil {
				t.Fatalf("name %q does not re-encode: %v", m.Name, err)
			}
			b.Write(q)
			b.WriteByte(':')
			b.Write(m.Value)
		}
		b.WriteByte('}')
		got, err1 := canonical(b.Bytes())
		want, err2 := canonical(data)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(got, want) {
			t.Fatalf("re-encoded %s canonicalizes to %s (%v), the text to %s (%v)", b.Bytes(), got, err1, want, err2)
		}
	})
}

// firstFault is the refusal Members owes an object of these names: the first member
// past max, or the first repeated name, whichever comes first.
func firstFault(names []string, max int) *Error {
	seen := map[string]bool{}
	for i, n := range names {
		if i == max {
			return &Error{Fault: TooMany, Limit: max}
		}
		if seen[n] {
			return &Error{Fault: Duplicate, Path: n}
		}
		seen[n] = true
	}
	return nil
}

// BenchmarkMembers reads objects of many distinct names without a limit that stops
// it: the time per member stays the same from a thousand members to a hundred thousand.
func BenchmarkMembers(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		data := object(n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := Members(data, "", n, func(Member) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/member")
		})
	}
}

func object(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	b.WriteByte('}')
	return b.Bytes()
}
