package http

import (
	"slices"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/policy"
)

// The defaults of the caller limits (decisions.md, "Caller authentication and limits").
const (
	DefaultMaxSolutionBytes     = intentd.DefaultSolutionBytes
	DefaultMaxAttrs             = 128
	DefaultMaxSetElements       = 1024
	DefaultMaxStringBytes       = 4 << 10
	DefaultMaxPolicySourceBytes = policy.MaxSourceBytes
)

// The codes of the limits the HTTP layer enforces beyond the body size.
const (
	// CodeLimitExceeded: an intent's attrs have too many fields, a set with too many
	// elements, or a string over the size limit (422).
	CodeLimitExceeded = "limit_exceeded"
	// CodePolicyTooLarge: a policy source over its size limit (413).
	CodePolicyTooLarge = "policy_too_large"
)

// Limits bound what one request may carry beyond its body size. Zero fields take the
// defaults; a limit above what the core can take is lowered to it, since the core
// would refuse the request anyway (see each field).
type Limits struct {
	// MaxSolutionBytes bounds a proposal's solution; at most intentd.MaxSolutionBytes.
	// A limit above the body limit is not lowered here, but a solution over the body
	// limit meets that first (413); intentd refuses such a setting at start.
	MaxSolutionBytes int `json:"max_solution_bytes"`
	// MaxAttrs bounds the fields of an intent's attrs.
	MaxAttrs int `json:"max_attrs"`
	// MaxSetElements bounds the elements of one set value, counted as sent.
	MaxSetElements int `json:"max_set_elements"`
	// MaxStringBytes bounds one string value, alone or in a set, in UTF-8 bytes.
	MaxStringBytes int `json:"max_string_bytes"`
	// MaxPolicySourceBytes bounds a policy source; at most policy.MaxSourceBytes.
	MaxPolicySourceBytes int `json:"max_policy_source_bytes"`
}

func (l *Limits) setDefaults() {
	def := func(v *int, d, most int) {
		if *v <= 0 {
			*v = d
		}
		if most > 0 && *v > most {
			*v = most
		}
	}
	def(&l.MaxSolutionBytes, DefaultMaxSolutionBytes, intentd.MaxSolutionBytes)
	def(&l.MaxAttrs, DefaultMaxAttrs, 0)
	def(&l.MaxSetElements, DefaultMaxSetElements, 0)
	def(&l.MaxStringBytes, DefaultMaxStringBytes, 0)
	def(&l.MaxPolicySourceBytes, DefaultMaxPolicySourceBytes, policy.MaxSourceBytes)
}

// CheckIntent checks a decoded intent's attrs against the limits. The server hands it to
// actors.Engine.SubmitIntent, which runs it on its own decoding of the intent before it
// spends a signature check and a policy lookup. Fields are checked in the order of their
// names, so that the same intent always gets the same message.
func (l Limits) CheckIntent(in intentd.Intent) error {
	if in.Attrs == nil {
		return nil
	}
	attrs := *in.Attrs
	if len(attrs) > l.MaxAttrs {
		return intentd.Errorf(intentd.KindUnprocessable, CodeLimitExceeded,
			"intent.attrs.fields: %d fields, over the limit of %d", len(attrs), l.MaxAttrs)
	}
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := l.checkValue("intent.attrs.fields."+name, attrs[name]); err != nil {
			return err
		}
	}
	return nil
}

func (l Limits) checkValue(path string, v policy.Value) error {
	switch v.Type() {
	case policy.TypeString:
		return l.checkString(path, v.Str())
	case policy.TypeStringSet:
		elems := v.Strings()
		if err := l.checkSet(path, len(elems)); err != nil {
			return err
		}
		for _, s := range elems {
			if err := l.checkString(path, s); err != nil {
				return err
			}
		}
	case policy.TypeIntSet:
		return l.checkSet(path, len(v.Ints()))
	}
	return nil
}

func (l Limits) checkSet(path string, n int) error {
	if n > l.MaxSetElements {
		return intentd.Errorf(intentd.KindUnprocessable, CodeLimitExceeded,
			"%s: a set of %d elements, over the limit of %d", path, n, l.MaxSetElements)
	}
	return nil
}

func (l Limits) checkString(path, s string) error {
	if len(s) > l.MaxStringBytes {
		return intentd.Errorf(intentd.KindUnprocessable, CodeLimitExceeded,
			"%s: a string of %d bytes, over the limit of %d", path, len(s), l.MaxStringBytes)
	}
	return nil
}

// CheckSolution checks a proposal's solution against its size limit. The message is
// the engine's for the same fault, with the configured limit.
func (l Limits) CheckSolution(p intentd.Proposal) error {
	if len(p.Solution) > l.MaxSolutionBytes {
		return intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidProposal,
			"solution: %d bytes, over the limit of %d", len(p.Solution), l.MaxSolutionBytes)
	}
	return nil
}

// CheckPolicySource checks a policy source against its size limit: a 413, as for a
// body over its limit, since it is the size alone that is refused.
func (l Limits) CheckPolicySource(source []byte) error {
	if len(source) > l.MaxPolicySourceBytes {
		return intentd.Errorf(intentd.KindTooLarge, CodePolicyTooLarge,
			"policy source: %d bytes, over the limit of %d", len(source), l.MaxPolicySourceBytes)
	}
	return nil
}
