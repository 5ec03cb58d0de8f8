package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// batch is a JSON-RPC batch of n pings.
func batch(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"},`, n), ",") + "]"
}

// TestCheckBatch checks what checkBatch passes to the SDK, with how many messages, and
// what it refuses.
func TestCheckBatch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     string
		messages int
		code     int
	}{
		{"one message", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 1, 0},
		{"not JSON, left to the SDK", `{"jsonrpc":`, 1, 0},
		{"a string", `"x"`, 1, 0},
		{"empty body", ``, 1, 0},
		{"empty batch, which the SDK refuses", `[]`, 0, 0},
		{"one", batch(1), 1, 0},
		{"white space before", " \t\r\n" + batch(2), 2, 0},
		{"white space after", batch(2) + "\n", 2, 0},
		{"at the bound", batch(MaxBatchMessages), MaxBatchMessages, 0},
		{"past the bound", batch(MaxBatchMessages + 1), 0, jsonrpc.CodeInvalidRequest},
		{"far past the bound", batch(6000), 0, jsonrpc.CodeInvalidRequest},
		{"past the bound, then not JSON", strings.TrimSuffix(batch(MaxBatchMessages+1), "]") + `,{"id":`, 0, jsonrpc.CodeInvalidRequest},
		{"invalid UTF-8", "[\"\xff\"," + batch(MaxBatchMessages + 1)[1:], 0, jsonrpc.CodeParseError},
		{"lone surrogate", `["\ud800",` + batch(MaxBatchMessages + 1)[1:], 0, jsonrpc.CodeParseError},
		{"trailing text", batch(2) + "x", 0, jsonrpc.CodeParseError},
		{"two batches", batch(2) + batch(2), 0, jsonrpc.CodeParseError},
		{"truncated", `[{"jsonrpc":"2.0"},`, 0, jsonrpc.CodeParseError},
		{"trailing comma", `[1,]`, 0, jsonrpc.CodeParseError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			messages, code, msg := checkBatch([]byte(tc.body))
			if messages != tc.messages || code != tc.code || (code == 0) != (msg == "") {
				t.Fatalf("checkBatch = %d, %d, %q; want %d messages, code %d", messages, code, msg, tc.messages, tc.code)
			}
			if code == jsonrpc.CodeInvalidRequest && !strings.Contains(msg, "at most 64 messages") {
				t.Fatalf("the refusal %q does not name the bound", msg)
			}
		})
	}
}

// FuzzCheckBatch checks checkBatch against encoding/json, which takes what the SDK's
// decoder takes and more (invalid UTF-8, lone surrogates): whatever it passes to the
// SDK is no array to encoding/json, or one of the messages it counted, at most
// MaxBatchMessages; and whatever it refuses for its length is an array longer than
// the bound, when encoding/json reads it at all.
func FuzzCheckBatch(f *testing.F) {
	// Arrays of zeros at the bound and past it: short seeds, which the fuzzer
	// minimizes quickly.
	zeros := func(n int) string { return "[" + strings.Repeat("0,", n-1) + "0]" }
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[]`, `[1]`, batch(2), zeros(MaxBatchMessages), zeros(MaxBatchMessages + 1),
		"[\"\xff\"]", `["\ud800"]`, ` [1] `, `[1]x`, `[1,]`, `[[1],{"a":[2]}]`, `"x"`, ``, `[`, "\xef\xbb\xbf[1]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		messages, code, msg := checkBatch(body)
		if (code == 0) != (msg == "") {
			t.Fatalf("checkBatch(%q) = %d, %d, %q: a code without a message or the reverse", body, messages, code, msg)
		}
		var elems []json.RawMessage
		isArray := json.Unmarshal(body, &elems) == nil
		switch code {
		case 0:
			if messages < 0 || messages > MaxBatchMessages {
				t.Fatalf("checkBatch(%q) passed %d messages", body, messages)
			}
			if isArray && len(elems) != messages {
				t.Fatalf("checkBatch(%q) counted %d messages of an array of %d", body, messages, len(elems))
			}
		case jsonrpc.CodeInvalidRequest:
			if isArray && len(elems) <= MaxBatchMessages {
				t.Fatalf("checkBatch(%q) refused an array of %d for its length", body, len(elems))
			}
		case jsonrpc.CodeParseError:
		default:
			t.Fatalf("checkBatch(%q) = code %d", body, code)
		}
	})
}
