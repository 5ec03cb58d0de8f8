package crypto

import (
	"bytes"
	"testing"
)

// TestParseSigningKeyHeader reads key files with the lines starting with "#" that say
// what they hold (intentctl keygen writes one), and without.
func TestParseSigningKeyHeader(t *testing.T) {
	k, err := GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	seed := k.EncodeFile()
	tests := []struct {
		name string
		text string
	}{
		{"the seed alone", string(seed)},
		{"under a header line", "# intentctl Ed25519 private key\n" + string(seed)},
		{"under an indented header and a blank line", "  # a key\n\n" + string(seed)},
		{"a comment after the seed", string(seed) + "# the service's key\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSigningKey([]byte(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.PublicKey(), k.PublicKey()) {
				t.Error("another key")
			}
		})
	}
	if _, err := ParseSigningKey([]byte("# only a comment\n")); err == nil {
		t.Error("a file of comments alone is taken for a key")
	}
}
