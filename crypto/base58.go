package crypto

import (
	"errors"
	"fmt"

	"github.com/mr-tron/base58"
)

// EncodeBase58 encodes b with the Bitcoin Base58 alphabet, the form the wire uses for
// keys, signatures, authenticator data and digests.
func EncodeBase58(b []byte) string {
	return base58.Encode(b)
}

// DecodeBase58 decodes a Bitcoin-alphabet Base58 string. The empty string is refused:
// no value on the wire is empty, and accepting it would turn a missing value into a
// zero-length one.
func DecodeBase58(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("empty string")
	}
	b, err := base58.Decode(s)
	if err != nil {
		return nil, fmt.Errorf("not valid Base58: %v", err)
	}
	return b, nil
}
