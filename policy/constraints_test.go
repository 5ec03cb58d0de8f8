package policy

import (
	"reflect"
	"testing"
)

func TestConstraints(t *testing.T) {
	p := mustCompile(t, example)
	got := p.Constraints()
	if len(got) != p.NumConstraints() {
		t.Fatalf("%d constraints, want %d", len(got), p.NumConstraints())
	}
	want6 := Constraint{Index: 6, Text: "evidence.brand in parameters.brands", Optional: true, OptionalParams: []string{"brands"}}
	if !reflect.DeepEqual(got[6], want6) {
		t.Errorf("constraint 6 = %+v, want %+v", got[6], want6)
	}
	if got[0].Text != `evidence.category in {"polo", "t-shirt"}` || got[0].Optional || got[0].OptionalParams != nil {
		t.Errorf("constraint 0 = %+v", got[0])
	}
	// The texts are those of the failures, which the printer gives.
	fails := p.Evaluate(Attrs{}, map[string]any{})
	for _, f := range fails {
		if got[f.Index].Text != f.PrettyExpr {
			t.Errorf("constraint %d: text %q, the failure's %q", f.Index, got[f.Index].Text, f.PrettyExpr)
		}
	}
}

func TestSkipped(t *testing.T) {
	p := mustCompile(t, example)
	tests := []struct {
		name  string
		i     int
		attrs Attrs
		want  bool
	}{
		{"optional, its parameter absent", 6, Attrs{"size": StringValue("M")}, true},
		{"optional, its parameter given", 6, Attrs{"brands": StringSetValue("x")}, false},
		{"optional, no attrs at all", 6, nil, true},
		{"not optional", 1, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Skipped(tt.i, tt.attrs); got != tt.want {
				t.Errorf("Skipped(%d) = %v, want %v", tt.i, got, tt.want)
			}
			// As Evaluate decides: a skipped constraint never fails.
			for _, f := range p.Evaluate(tt.attrs, map[string]any{}) {
				if f.Index == tt.i && tt.want {
					t.Errorf("constraint %d failed: %s", tt.i, f.Reason)
				}
			}
		})
	}
}
