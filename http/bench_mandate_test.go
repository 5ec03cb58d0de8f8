package http

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
)

// benchMandatePolicy is the demo policy's t-shirt under a mandate: its constraints, an
// amount, a week, and the three limits of a mandate, which never bind here.
const benchMandatePolicy = `
name bench_mandate
amount evidence.price_cents + evidence.shipping_cents
period week
parameters { size: string  colors: set<string>  max_price_cents: int  budget_cents: int  max_purchases: int  per_week: int }
evidence { category: string  size: string  color: string  price_cents: int  shipping_cents: int  in_stock: bool }
requires {
  evidence.category in {"t-shirt", "polo"};
  evidence.size == parameters.size;
  evidence.color in parameters.colors;
  evidence.price_cents + evidence.shipping_cents <= parameters.max_price_cents;
  evidence.in_stock;
  mandate.spent + purchase.amount <= parameters.budget_cents;
  mandate.purchases < parameters.max_purchases;
  mandate.period_purchases < parameters.per_week;
}
`

// purchasesPerMandate is how many purchases each mandate of the benchmark takes: a
// mandate's record lists its purchases and each decision rewrites it, so its cost
// grows with them; fifty is a busy household's year of t-shirts.
const purchasesPerMandate = 50

// BenchmarkPurchase compares deciding a purchase under a mandate with deciding a plain
// proposal, through the handler over an engine on a synced Pebble store, unsigned
// both: "proposal" is POST /intents and its POST /intents/{id}/proposal, "purchase"
// one POST /mandates/{id}/purchases, which makes the same intent and proposal and
// decides it against the mandate's totals in the mandate's serialized step (two synced
// writes of the mandate's record more). The timer stops when every outcome has been
// published, so cpu-µs/op is all a decision costs the process. The target: a purchase
// costs at most 20 % more CPU than a proposal (docs/benchmarks.md, "Purchases under a
// mandate").
func BenchmarkPurchase(b *testing.B) {
	for _, callers := range []int{1, 32} {
		for _, kind := range []string{"proposal", "purchase"} {
			b.Run(fmt.Sprintf("callers=%d/%s", callers, kind), func(b *testing.B) { benchPurchases(b, callers, kind == "purchase") })
		}
	}
}

// benchPurchases is one case of BenchmarkPurchase: b.N decisions from callers
// concurrent callers, each one or two requests built before the timer.
func benchPurchases(b *testing.B, callers int, purchase bool) {
	e := benchAgentEngine(b, b.N)
	source := evidence.DemoPolicy
	if purchase {
		source = benchMandatePolicy
	}
	pid, err := e.PutPolicy(context.Background(), source)
	if err != nil {
		b.Fatal(err)
	}
	srv := NewServer(e, Options{})
	const solution = "https://shop.example/products/tshirt-navy-m"
	reqs := make([][]*http.Request, b.N)
	var mandate string
	for i := range reqs {
		id := uuid.NewString()
		if !purchase {
			intent := fmt.Sprintf(`{"intent":{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000}}}},"authorship":"Unsigned"}`, id, pid)
			reqs[i] = []*http.Request{jsonRequest("/intents", intent), jsonRequest("/intents/"+id+"/proposal", `{"solution":"`+solution+`"}`)}
			continue
		}
		if i%purchasesPerMandate == 0 {
			mandate = uuid.NewString()
			raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"expires_at":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","white"]}},`+
				`"max_price_cents":{"Int":3000},"budget_cents":{"Int":1000000},"max_purchases":{"Int":1000},"per_week":{"Int":1000}}}}`,
				mandate, pid, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
			md, err := intentd.DecodeMandate(raw)
			if err != nil {
				b.Fatal(err)
			}
			sub, err := intentd.NewMandateSubmission(md, raw, crypto.Authorship{})
			if err != nil {
				b.Fatal(err)
			}
			if err := e.CreateMandate(context.Background(), sub); err != nil {
				b.Fatal(err)
			}
		}
		reqs[i] = []*http.Request{jsonRequest("/mandates/"+mandate+"/purchases", fmt.Sprintf(`{"intent_id":%q,"solution":%q}`, id, solution))}
	}
	driveDecisions(b, e, srv, callers, reqs, func(ev intentd.Event) error {
		if ev.Type != intentd.StateSuccess {
			return fmt.Errorf("intent %s: %s", ev.IntentID, ev.Data)
		}
		return nil
	})
}

// jsonRequest is a POST of body to path.
func jsonRequest(path, body string) *http.Request {
	r := httptest.NewRequest("POST", path, bytes.NewReader([]byte(body)))
	r.Header.Set("Content-Type", "application/json")
	return r
}
