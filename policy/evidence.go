package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Evidence is a flat JSON object decoded with json.Decoder.UseNumber: json.Number,
// string, bool and []any values. Go callers may also pass int, int64, []string and
// []int64. convert turns one value into a Value of the type the policy wants; when it
// cannot, it returns a typeBad value and, if why is set, the reason. The passing path
// does not allocate: reasons are only built for a failure's explanation.
func convert(raw any, want Type, why bool) (Value, string) {
	bad := func(format string, args ...any) (Value, string) {
		if !why {
			return Value{t: typeBad}, ""
		}
		return Value{t: typeBad}, fmt.Sprintf(format, args...)
	}
	switch want {
	case TypeInt:
		n, ok, reason := toInt(raw, why)
		if !ok {
			return Value{t: typeBad}, reason
		}
		return IntValue(n), ""
	case TypeString:
		if s, ok := raw.(string); ok {
			return StringValue(s), ""
		}
	case TypeBool:
		if b, ok := raw.(bool); ok {
			return BoolValue(b), ""
		}
	case TypeStringSet, TypeIntSet:
		return toSet(raw, want, why)
	case TypeAny:
		switch x := raw.(type) {
		case string:
			return StringValue(x), ""
		case bool:
			return BoolValue(x), ""
		case []any:
			// The first element decides the element type; an empty array is a set
			// that every set operation accepts as either.
			if len(x) == 0 {
				return Value{t: TypeStringSet, set: &setValue{}}, ""
			}
			if _, ok := x[0].(string); ok {
				return toSet(raw, TypeStringSet, why)
			}
			return toSet(raw, TypeIntSet, why)
		case []string:
			return toSet(raw, TypeStringSet, why)
		case []int64, []int:
			return toSet(raw, TypeIntSet, why)
		}
		n, ok, reason := toInt(raw, why)
		if !ok {
			if isNumber(raw) {
				return Value{t: typeBad}, reason
			}
			return bad("a value of none of the language's types: %s", describeRaw(raw))
		}
		return IntValue(n), ""
	}
	return bad("want %s, got %s", want, describeRaw(raw))
}

func isNumber(raw any) bool {
	switch raw.(type) {
	case json.Number, int, int64, int32, float64, float32, uint, uint64:
		return true
	}
	return false
}

// toInt accepts an integral json.Number in the int64 range, or a Go integer.
func toInt(raw any, why bool) (int64, bool, string) {
	switch x := raw.(type) {
	case json.Number:
		s := string(x)
		if !why {
			// ParseInt allocates its error; on the passing path, check digits first.
			if !plainInteger(s) {
				return 0, false, ""
			}
			n, err := strconv.ParseInt(s, 10, 64)
			return n, err == nil, ""
		}
		n, bad := parseInteger(s)
		if bad != "" {
			return 0, false, "want int, got " + bad
		}
		return n, true, ""
	case int:
		return int64(x), true, ""
	case int64:
		return x, true, ""
	case int32:
		return int64(x), true, ""
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true, ""
		}
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), true, ""
		}
	case float64:
		if why {
			return 0, false, fmt.Sprintf("want int, got the floating-point number %v (evidence numbers must be decoded with UseNumber)", x)
		}
		return 0, false, ""
	}
	if why {
		return 0, false, "want int, got " + describeRaw(raw)
	}
	return 0, false, ""
}

func plainInteger(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 19 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func toSet(raw any, want Type, why bool) (Value, string) {
	bad := func(format string, args ...any) (Value, string) {
		if !why {
			return Value{t: typeBad}, ""
		}
		return Value{t: typeBad}, fmt.Sprintf(format, args...)
	}
	switch x := raw.(type) {
	case []any:
		if len(x) > MaxSetElements {
			return bad("a set of %d elements, over the limit of %d", len(x), MaxSetElements)
		}
		if want == TypeStringSet {
			strs := make([]string, len(x))
			for i, e := range x {
				s, ok := e.(string)
				if !ok {
					return bad("want %s, got an array whose element %d is %s", want, i, describeRaw(e))
				}
				strs[i] = s
			}
			return Value{t: want, set: newStrSet(strs)}, ""
		}
		ints := make([]int64, len(x))
		for i, e := range x {
			n, ok, reason := toInt(e, why)
			if !ok {
				return bad("want %s, got an array whose element %d is bad: %s", want, i, reason)
			}
			ints[i] = n
		}
		return Value{t: want, set: newIntSet(ints)}, ""
	case []string:
		if want == TypeStringSet {
			return Value{t: want, set: newStrSet(x)}, ""
		}
	case []int64:
		if want == TypeIntSet {
			return Value{t: want, set: newIntSet(x)}, ""
		}
	case []int:
		if want == TypeIntSet {
			ints := make([]int64, len(x))
			for i, n := range x {
				ints[i] = int64(n)
			}
			return Value{t: want, set: newIntSet(ints)}, ""
		}
	}
	return bad("want %s, got %s", want, describeRaw(raw))
}

// describeRaw names an evidence value's JSON type, with the value when it is short.
func describeRaw(raw any) string {
	switch x := raw.(type) {
	case nil:
		return "null"
	case string:
		return "the string " + formatValue(StringValue(x), 16)
	case bool:
		return "the boolean " + strconv.FormatBool(x)
	case json.Number:
		return "the number " + string(x)
	case []any, []string, []int64, []int:
		return "an array"
	case map[string]any:
		return "an object"
	case int, int64, int32, uint, uint64, float64, float32:
		return fmt.Sprintf("the number %v", x)
	}
	return fmt.Sprintf("a Go %T", raw)
}

// CheckEvidence checks the types of the evidence fields the policy asks for (a field
// that is absent is not an error here: the constraints reading it fail). The first
// wrong field in name order is returned as a *FieldError.
func (p *Policy) CheckEvidence(evidence map[string]any) error {
	for _, f := range p.evidence {
		raw, ok := evidence[f.Name]
		if !ok {
			continue
		}
		if v, reason := convert(raw, f.Type, true); v.t == typeBad {
			return &FieldError{Field: f.Name, Reason: reason}
		}
	}
	return nil
}
