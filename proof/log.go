package proof

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
)

// CheckLog is the check of a bundle's transparency log inclusion: its entry against
// the receipt, its proof against the checkpoint, the checkpoint's signature.
const CheckLog = "log"

// LogVerifier is the note verifier of a log's checkpoints: the service's Ed25519 key
// under the log's origin as the key name. The log signs with the receipt key, so that
// whoever pinned that key can check checkpoints too (docs/proofs.md says why).
func LogVerifier(origin string, pub ed25519.PublicKey) (note.Verifier, error) {
	if err := CheckOrigin(origin); err != nil {
		return nil, err
	}
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return nil, fmt.Errorf("log verifier: %w", err)
	}
	return note.NewVerifier(vkey)
}

// CheckOrigin refuses an origin that cannot name a note key, or that begins as a JSON
// object does: a checkpoint signed with the receipt key must never read as a receipt.
func CheckOrigin(origin string) error {
	switch {
	case origin == "" || len(origin) > 256:
		return errors.New("log origin: want 1 to 256 bytes")
	case strings.HasPrefix(origin, "{"):
		return errors.New("log origin: must not begin with '{'")
	case strings.ContainsAny(origin, " +\n\t") || !isPrint(origin):
		return fmt.Errorf("log origin %q: want printable ASCII without spaces or '+'", origin)
	}
	return nil
}

func isPrint(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// ParseCheckpoint opens a signed checkpoint of the log with the given origin under
// key, refusing one that is not signed by it, names another origin, or whose root is
// not a SHA-256 hash.
func ParseCheckpoint(signed []byte, origin string, key ed25519.PublicKey) (*log.Checkpoint, error) {
	v, err := LogVerifier(origin, key)
	if err != nil {
		return nil, err
	}
	cp, _, _, err := log.ParseCheckpoint(signed, origin, v)
	if err != nil {
		return nil, err
	}
	if len(cp.Hash) != sha256.Size {
		return nil, fmt.Errorf("checkpoint root is %d bytes, want %d", len(cp.Hash), sha256.Size)
	}
	return cp, nil
}

// LeafHash is the RFC 6962 hash of a log entry.
func LeafHash(entry []byte) []byte { return rfc6962.DefaultHasher.HashLeaf(entry) }

// VerifyLogInclusion checks that a bundle's log member shows its receipt in the log:
// the checkpoint is signed by key (the receipt key) with the origin the checkpoint
// names, the entry is the leaf of this intent's outcome and names this receipt's
// digest, and the inclusion proof leads from the entry to the checkpoint's root. It
// returns the checkpoint it verified against.
func VerifyLogInclusion(inc *intentd.LogInclusion, receipt []byte, r *crypto.Receipt, key ed25519.PublicKey) (*log.Checkpoint, error) {
	origin, _, ok := strings.Cut(inc.Checkpoint, "\n")
	if !ok {
		return nil, verifyErr(CheckLog, "log checkpoint has no origin line")
	}
	cp, err := ParseCheckpoint([]byte(inc.Checkpoint), origin, key)
	if err != nil {
		return nil, verifyErr(CheckLog, "log checkpoint does not verify under the receipt key: %v", err)
	}
	e, err := intentd.ParseLogEntry(inc.Entry)
	if err != nil {
		return nil, verifyErr(CheckLog, "%v", err)
	}
	want, err := crypto.Digest(receipt)
	if err != nil {
		return nil, verifyErr(CheckLog, "receipt digest cannot be computed: %v", err)
	}
	switch {
	case e.IntentID != r.IntentID:
		return nil, verifyErr(CheckLog, "log entry is of intent %s, the receipt of %s", e.IntentID, r.IntentID)
	case string(e.Type) != r.Outcome:
		return nil, verifyErr(CheckLog, "log entry records %s, the receipt states %s", e.Type, r.Outcome)
	case e.ReceiptDigest != want:
		return nil, verifyErr(CheckLog, "log entry names receipt %s, this receipt digests to %s", e.ReceiptDigest, want)
	}
	if inc.LeafIndex >= cp.Size {
		return nil, verifyErr(CheckLog, "leaf %d is beyond the checkpoint's %d leaves", inc.LeafIndex, cp.Size)
	}
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, inc.LeafIndex, cp.Size, LeafHash(inc.Entry), inc.InclusionProof, cp.Hash); err != nil {
		return nil, verifyErr(CheckLog, "log inclusion proof of leaf %d in %d does not verify: %v", inc.LeafIndex, cp.Size, err)
	}
	return cp, nil
}
