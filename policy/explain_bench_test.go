package policy

import "testing"

// BenchmarkExplainOnly measures the explainer alone over the failing constraints of
// bench25: what a failing evaluation costs beyond running the constraints and
// allocating its result.
func BenchmarkExplainOnly(b *testing.B) {
	p := mustCompile(b, bench25)
	a, ev := mustAttrs(b, bench25Attrs), mustEvidence(b, bench25Fail)
	fr := &frame{stack: make([]Value, p.maxStack), params: make([]Value, len(p.params)), ev: make([]Value, len(p.evidence)), ctx: make([]Value, numCtx)}
	p.loadParams(fr.params, a)
	for i, f := range p.evidence {
		fr.ev[i], _ = convert(ev[f.Name], f.Type, false)
	}
	fails := p.Evaluate(a, ev)
	res := make([]result, len(fails))
	for i, f := range fails {
		res[i] = p.pg.run(p.cons[f.Index].code, fr)
	}
	x := &explainer{p: p, fr: fr, attrs: a, evidence: ev}
	b.ReportAllocs()
	for b.Loop() {
		x.buf = x.buf[:0]
		for i, f := range fails {
			x.appendReason(p.cons[f.Index].x, res[i])
		}
	}
	b.ReportMetric(float64(len(x.buf)), "reason-bytes")
}
