package policy_test

import (
	"context"
	"testing"

	"github.com/intentd/intentd/policy"
)

// policy25 is a purchase policy of 25 constraints, of the kinds real policies hold:
// bounds, sums, memberships, text checks and an optional one.
const policy25 = `name shoes_v3
parameters {
  size: int
  colors: set<string>
  max_price_cents: int
  max_shipping_cents: int
  brands: optional set<string>
  min_rating: int
  deliver_by: int
  country: string
}
evidence {
  category: string
  size: int
  color: string
  brand: string
  price_cents: int
  shipping_cents: int
  tax_cents: int
  in_stock: bool
  rating: int
  reviews: int
  delivery: int
  ships_from: string
  title: string
  seller: string
  returns_days: int
  condition: string
}
requires {
  evidence.category in {"shoes", "sneakers", "boots"};
  evidence.size == parameters.size;
  evidence.color in parameters.colors;
  evidence.price_cents + evidence.shipping_cents + evidence.tax_cents <= parameters.max_price_cents;
  evidence.shipping_cents <= parameters.max_shipping_cents;
  evidence.in_stock;
  optional: evidence.brand in parameters.brands;
  100 <= evidence.price_cents <= 100000;
  0 <= evidence.shipping_cents;
  0 <= evidence.tax_cents <= evidence.price_cents;
  evidence.rating >= parameters.min_rating;
  evidence.rating <= 50;
  evidence.reviews >= 10;
  evidence.delivery <= parameters.deliver_by;
  evidence.ships_from == parameters.country or evidence.ships_from in {"US", "CA"};
  not contains(lower(evidence.title), "replica");
  len(evidence.title) <= 200;
  evidence.seller != "";
  evidence.returns_days >= 14;
  evidence.condition == "new";
  starts_with(evidence.seller, "shop:") or evidence.seller == "marketplace";
  len(parameters.colors) <= 5;
  parameters.max_price_cents <= 1000000;
  evidence.size >= 30 and evidence.size <= 50;
  evidence.color not in {"neon"};
}
`

// BenchmarkAnalyze25 is the whole analysis of a policy of 25 constraints: the time a
// policy check takes (cvc5 started, every question asked).
func BenchmarkAnalyze25(b *testing.B) {
	s := solverOrSkip(b, "cvc5")
	p := compile(b, policy25)
	for b.Loop() {
		a, err := policy.Analyze(context.Background(), p, s, policy.AnalyzeOptions{})
		if err != nil || !a.Satisfiable || len(a.Unknown) > 0 {
			b.Fatalf("%+v, %v", a, err)
		}
	}
}
