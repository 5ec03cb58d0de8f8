package http

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/intentd/intentd"
)

func BenchmarkDecodeAuthoredIntent(b *testing.B) {
	body := signedBody(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := DecodeAuthoredIntent(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeProposal(b *testing.B) {
	body := []byte(`{"solution":"https://shop.example/products/tshirt-navy-m"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeProposal(body); err != nil {
			b.Fatal(err)
		}
	}
}

// manyKeys is a JSON object of n distinct names, each with the value v: the shape of a
// body built to make a decoder compare names with one another.
func manyKeys(n int, v string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":` + v)
	}
	b.WriteByte('}')
	return b.String()
}

// BenchmarkDecodeManyKeys decodes bodies of a thousand, ten thousand and a hundred
// thousand distinct names, all refused. ns/key is the time per name of the body: it
// must not grow with the number of names.
func BenchmarkDecodeManyKeys(b *testing.B) {
	decoders := []struct {
		name   string
		decode func([]byte) error
	}{
		{"AuthoredIntent", func(body []byte) error { _, _, _, err := DecodeAuthoredIntent(body); return err }},
		{"Proposal", func(body []byte) error { _, err := DecodeProposal(body); return err }},
	}
	for _, d := range decoders {
		for _, n := range []int{1_000, 10_000, 100_000} {
			body := []byte(manyKeys(n, "0"))
			b.Run(d.name+"/keys="+strconv.Itoa(n), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if d.decode(body) == nil {
						b.Fatal("a body of unknown names was accepted")
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
			})
		}
	}
}

// BenchmarkStreamEvent measures framing and flushing one event, the per-event cost of
// every subscriber.
func BenchmarkStreamEvent(b *testing.B) {
	ev := intentd.Event{ID: 123456, Type: intentd.StateSuccess, Data: []byte(`{"type":"success","intent_id":"5f0c6a52-3b1e-4a7e-9a51-1b2b8a3c4d5e","proposal":{"solution":"https://shop.example/products/tshirt-navy-m"},"evidence":{"brand":"Northwind","category":"t-shirt","color":"navy","in_stock":true,"price_cents":1999,"shipping_cents":499,"size":"M"}}`)}
	rec := httptest.NewRecorder()
	st := &stream{w: rec, rc: http.NewResponseController(rec)}
	b.ReportAllocs()
	for b.Loop() {
		rec.Body.Reset()
		if err := st.event(ev); err != nil {
			b.Fatal(err)
		}
		if err := st.flush(); err != nil {
			b.Fatal(err)
		}
	}
}
