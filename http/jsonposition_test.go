package http

import (
	"errors"
	"testing"

	"github.com/intentd/intentd"
)

// TestInvalidJSONPosition sends bodies that are not JSON: each is invalid_json, whose
// message says where the text stops parsing and, for a trailing comma, that it is one.
func TestInvalidJSONPosition(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"a trailing comma in the intent", "{\"intent\": {\"id\": \"x\",}, \"authorship\": \"Unsigned\"}",
			"the body is not valid JSON: line 1, column 23: a comma before '}': JSON allows no trailing comma"},
		{"a trailing comma on a line of its own", "{\n  \"intent\": {},\n  \"authorship\": \"Unsigned\",\n}",
			"the body is not valid JSON: line 4, column 1: a comma before '}': JSON allows no trailing comma"},
		{"a trailing comma in an array", `{"intent": {"attrs": {"fields": {"c": {"Set": {"String": ["a",]}}}}}, "authorship": "Unsigned"}`,
			"the body is not valid JSON: line 1, column 63: a comma before ']': JSON allows no trailing comma"},
		{"a character out of place", "{\"intent\" {}}", "the body is not valid JSON: line 1, column 11: invalid character '{' after object key"},
		{"text that ends early", "{\"intent\": {", "the body is not valid JSON: line 1, column 13: the text ends inside a value"},
		{"after a multibyte character", "{\"intent\": \"é\" x}", "the body is not valid JSON: line 1, column 16: invalid character 'x' after object key:value pair"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := DecodeAuthoredIntent([]byte(tt.body))
			var e *intentd.Error
			if !errors.As(err, &e) || e.Code != CodeInvalidJSON || e.Message != tt.want {
				t.Fatalf("err = %v, want invalid_json: %s", err, tt.want)
			}
		})
	}
	t.Run("a proposal", func(t *testing.T) {
		_, err := DecodeProposal([]byte(`{"solution": "sku:TS-NAVY-M",}`))
		var e *intentd.Error
		if !errors.As(err, &e) || e.Code != CodeInvalidJSON || e.Message != "the body is not valid JSON: line 1, column 30: a comma before '}': JSON allows no trailing comma" {
			t.Fatalf("err = %v", err)
		}
	})
}
