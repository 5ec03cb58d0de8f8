package strictjson

import (
	"errors"
	"fmt"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Unmarshal decodes data, exactly one JSON value, into the struct v as strictly as the
// rest of the package reads: names matched exactly and each at most once, at any depth,
// a member v has no field for refused (so that no object is read past its first
// unknown member), invalid UTF-8 and lone surrogates refused. It is for the small
// fixed shapes whose fields a struct says best. A member v has no field for is named as
// encoding/json names it, `unknown field "x"`; a value a field's own UnmarshalJSON or
// decoding refuses gives that refusal as it is.
func Unmarshal(data []byte, v any) error {
	err := json.Unmarshal(data, v, json.RejectUnknownMembers(true))
	if err == nil {
		return nil
	}
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return err
	}
	if errors.Is(err, json.ErrUnknownName) {
		name := fmt.Sprintf("unknown field %q", se.JSONPointer.LastToken())
		if parent := se.JSONPointer.Parent(); parent != "" {
			return fmt.Errorf("%s: %s", pointerPath(parent), name)
		}
		return errors.New(name)
	}
	// Worded as encoding/json words it, which the callers' messages were written for:
	// the value, the Go type it would not go into, and why.
	if se.GoType != nil {
		why := ""
		if se.Err != nil {
			why = ": " + se.Err.Error()
		}
		return fmt.Errorf("cannot unmarshal JSON %s into Go value of type %s%s", KindName(se.JSONKind), se.GoType, why)
	}
	if se.Err != nil {
		return se.Err
	}
	return err
}

// pointerPath writes a JSON pointer in the dotted form of paths. A pointer does not
// say whether a token is a name or an index, so an index is written as a name.
func pointerPath(p jsontext.Pointer) string {
	path := ""
	for tok := range p.Tokens() {
		path = Join(path, tok)
	}
	return path
}
