package strictjson

// FieldError says which field of a decoded input is wrong and why: the error the
// decoders built on this package return, whatever they decode, so that a caller names
// the field the same way for an intent's attrs and for its authorship. Field is the
// dotted path of the offending value relative to what was decoded; empty when the
// value itself is at fault.
type FieldError struct {
	Field  string
	Reason string
}

// Error returns "field: reason", or the reason alone for the top-level value.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}
