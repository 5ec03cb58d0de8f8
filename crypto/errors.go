package crypto

import (
	"errors"

	"github.com/intentd/intentd/internal/strictjson"
)

// ErrUnsignedNotPermitted is returned by Verify for an Unsigned authorship when
// VerifyOptions.AllowUnsigned is false. It is kept apart from ErrAuthorshipInvalid
// because the caller did nothing wrong cryptographically: the server's setting refuses
// the form, and clients need to tell the two apart (unsigned_not_permitted).
var ErrUnsignedNotPermitted = errors.New("unsigned intents are not permitted")

// ErrAuthorshipInvalid is wrapped by every other error Verify returns: a signature that
// does not verify, a key that is not a point of its curve, a multisig whose weights fall
// short, and so on. The wrapping error's message says what failed.
var ErrAuthorshipInvalid = errors.New("authorship invalid")

// FieldError is the error of every decoding failure of the wire types. Field is the
// dotted path of the offending value, relative to the Authorship value (for example
// "Signed.Ed25519.pub_key" or "Signed.Multisig.signatures[1].Passkey.signature"); it is
// empty when the Authorship value itself is at fault. The HTTP layer turns a FieldError
// into a 422 that names the field, prefixing the path of the authorship in the body.
type FieldError = strictjson.FieldError
