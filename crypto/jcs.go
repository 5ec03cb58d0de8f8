package crypto

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// maxExactInteger is the largest magnitude I-JSON (RFC 7493) lets a number have and
// still mean one integer: JCS writes every number as the float64 nearest to it, so
// above 2^53-1 distinct integers share one canonical form.
const maxExactInteger = 1<<53 - 1

// Canonicalize returns the RFC 8785 (JCS) serialization of a JSON text: object members
// sorted by their UTF-16 code units, no insignificant whitespace, numbers and strings in
// their one canonical form. Signatures are over these bytes, so that the order of keys
// or the spacing a client happened to send does not change what was signed. Duplicate
// object keys are an error, since no canonical form exists for them, and so are invalid
// UTF-8, lone surrogates and numbers beyond the range of a double, which RFC 8785 has no
// form for either. jsontext does the work: every intent is canonicalized on its way in,
// and it does so in a fraction of the time and memory of a parse into a tree.
func Canonicalize(jsonBytes []byte) ([]byte, error) {
	v := jsontext.Value(bytes.Clone(jsonBytes))
	if err := v.Canonicalize(); err != nil {
		// The message names the fault and where it is; the package name adds nothing
		// for the client who reads it.
		return nil, errors.New(strings.TrimPrefix(err.Error(), "jsontext: "))
	}
	// jsontext writes a number beyond the range of a double as the largest double, where
	// RFC 8785 (3.2.2.3) calls for an error. Any such number comes out as that literal, so
	// only a text that holds it is looked at again.
	if bytes.Contains(v, maxDouble) {
		if err := checkRange(jsonBytes); err != nil {
			return nil, err
		}
	}
	return v, nil
}

var maxDouble = []byte(strconv.FormatFloat(math.MaxFloat64, 'g', -1, 64))

// checkRange refuses a valid JSON text holding a number that overflows a double.
func checkRange(js []byte) error {
	return eachNumber(js, func(lit []byte) error {
		if f, _ := strconv.ParseFloat(string(lit), 64); math.IsInf(f, 0) {
			return fmt.Errorf("number %s is beyond the range of a double, which JCS cannot represent", lit)
		}
		return nil
	})
}

// PasskeyChallenge returns the WebAuthn challenge a passkey must sign for an intent:
// base64url without padding of SHA-256(JCS(intent)). intentJSON is the raw JSON of the
// `intent` object.
func PasskeyChallenge(intentJSON []byte) (string, error) {
	canon, err := canonicalIntent(intentJSON)
	if err != nil {
		return "", err
	}
	return challengeOf(canon), nil
}

func challengeOf(canon []byte) string {
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// canonicalIntent is Canonicalize for the bytes a signature covers. It also refuses an
// intent holding a number beyond ±(2^53-1): JCS would round it, so that a signature
// over {"Int":9007199254740993} would verify for {"Int":9007199254740992} too. RFC 8785
// asks for I-JSON input for this reason; signing stays unambiguous by holding to it.
func canonicalIntent(intentJSON []byte) ([]byte, error) {
	canon, err := Canonicalize(intentJSON)
	if err != nil {
		return nil, err
	}
	if err := checkNumbers(canon); err != nil {
		return nil, err
	}
	return canon, nil
}

// checkNumbers scans valid JSON for number literals whose magnitude is above
// maxExactInteger. Rounding cannot bring a number above the limit back under it, so
// scanning the canonical form finds the same numbers as scanning the input.
func checkNumbers(js []byte) error {
	return eachNumber(js, func(lit []byte) error {
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil || math.Abs(f) > maxExactInteger {
			return fmt.Errorf("number %s is beyond ±(2^53-1), where JCS cannot represent it exactly", lit)
		}
		return nil
	})
}

// eachNumber calls fn with each number literal of valid JSON, outside its strings.
func eachNumber(js []byte, fn func(lit []byte) error) error {
	for i := 0; i < len(js); i++ {
		switch c := js[i]; {
		case c == '"':
			for i++; i < len(js) && js[i] != '"'; i++ {
				if js[i] == '\\' {
					i++
				}
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(js) && isNumberByte(js[j]) {
				j++
			}
			if err := fn(js[i:j]); err != nil {
				return err
			}
			i = j - 1
		}
	}
	return nil
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
