package policy

// Constraint describes one constraint of a compiled policy, for the tools that report
// on constraints one by one, such as a test runner's coverage: a Failure names only
// the constraints that failed, and a report must name those that never did too.
type Constraint struct {
	// Index is the constraint's number, from 0, as a Failure's Index gives it.
	Index int
	// Text is the expression's canonical text, a Failure's PrettyExpr; an optional
	// constraint's "optional: " is not part of it.
	Text string
	// Optional is set for a constraint marked optional:.
	Optional bool
	// OptionalParams are the optional parameters an optional constraint reads: when
	// an intent lacks any of them the constraint holds without being evaluated.
	OptionalParams []string
}

// Constraints describes the constraints, in order.
func (p *Policy) Constraints() []Constraint {
	out := make([]Constraint, len(p.cons))
	for i, c := range p.cons {
		out[i] = Constraint{Index: i, Text: c.pretty, Optional: c.optional}
		for _, s := range c.optSlots {
			out[i].OptionalParams = append(out[i].OptionalParams, p.params[s].Name)
		}
	}
	return out
}

// Skipped reports whether constraint i holds on attrs a without being evaluated: it is
// optional and an optional parameter it reads is absent from a, as Evaluate decides.
func (p *Policy) Skipped(i int, a Attrs) bool {
	c := &p.cons[i]
	if !c.optional {
		return false
	}
	for _, s := range c.optSlots {
		if _, ok := a[p.params[s].Name]; !ok {
			return true
		}
	}
	return false
}
