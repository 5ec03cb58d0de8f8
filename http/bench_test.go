package http

import (
	"net/http"
	"net/http/httptest"
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
