package crypto

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/intentd/intentd/internal/secretfile"
)

// SigningKeyFile is the name of the service's signing key in its data folder.
const SigningKeyFile = "signing.key"

// maxKeyFileBytes bounds what is read of a key file: the Base58 of a 32-byte seed is
// at most 44 characters, so anything near this size is not a key file.
const maxKeyFileBytes = 1024

// SigningKey is the service's Ed25519 key, the one receipts are signed with.
//
// Its String and GoString name the key by its id only, so that a key passed to a logger
// or a %v by mistake does not print the private half.
type SigningKey struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	id   string
}

// NewSigningKey makes the signing key of a 32-byte Ed25519 seed (RFC 8032 private key).
func NewSigningKey(seed []byte) (*SigningKey, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("crypto: signing key seed is %d bytes, want %d", len(seed), ed25519.SeedSize)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	return &SigningKey{priv: priv, pub: pub, id: KeyID(pub)}, nil
}

// GenerateSigningKey makes a fresh random signing key.
func GenerateSigningKey() (*SigningKey, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := io.ReadFull(rand.Reader, seed); err != nil {
		return nil, fmt.Errorf("crypto: generate signing key: %w", err)
	}
	return NewSigningKey(seed)
}

// Derive is a key of its own for another use than receipts, made from this key's seed
// and a label naming the use (HKDF-SHA256): every node holding the signing key derives
// the same key, and a signature made with it can never pass for a receipt's.
func (k *SigningKey) Derive(label string) (ed25519.PrivateKey, error) {
	seed, err := hkdf.Key(sha256.New, k.priv.Seed(), nil, label, ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("crypto: derive a key for %s: %w", label, err)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// KeyID is the id receipts name a key by: Base58 of the SHA-256 of the 32-byte public
// key. It is a digest rather than the key itself so that nobody mistakes the key_id
// written inside a receipt for a reason to trust that key: trust comes from a public key
// obtained apart from the receipt (GET /info, or a key pinned by the verifier).
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return EncodeBase58(sum[:])
}

// PublicKey returns the public half; the caller must not modify it.
func (k *SigningKey) PublicKey() ed25519.PublicKey { return k.pub }

// ID returns KeyID of the public key.
func (k *SigningKey) ID() string { return k.id }

// Sign signs msg (pure Ed25519, no pre-hashing).
func (k *SigningKey) Sign(msg []byte) []byte { return ed25519.Sign(k.priv, msg) }

// String names the key by its id, never by its private half.
func (k *SigningKey) String() string { return "signing key " + k.id }

// GoString is String, so that %#v does not print the private half either.
func (k *SigningKey) GoString() string { return k.String() }

// EncodeFile returns the contents of a key file for k: the Base58 of the 32-byte seed
// and a newline. ParseSigningKey reads it back.
func (k *SigningKey) EncodeFile() []byte {
	return []byte(EncodeBase58(k.priv.Seed()) + "\n")
}

// ParseSigningKey reads the contents of a key file: the Base58 (Bitcoin alphabet) of a
// 32-byte Ed25519 seed, with any surrounding whitespace, after any lines starting with
// "#" (intentctl keygen's file says in one what it holds). Errors never quote the
// contents, which may be a key.
func ParseSigningKey(text []byte) (*SigningKey, error) {
	s := string(bytes.TrimSpace(StripComments(text)))
	if s == "" {
		return nil, errors.New("empty, want the Base58 of a 32-byte Ed25519 seed")
	}
	seed, err := DecodeBase58(s)
	if err != nil {
		return nil, errors.New("not Base58, want the Base58 of a 32-byte Ed25519 seed")
	}
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("decodes to %d bytes, want a 32-byte Ed25519 seed", len(seed))
	}
	return NewSigningKey(seed)
}

// LoadSigningKey reads a key file (the --signing-key FILE of intentd). It refuses a
// file that group or others may read or write, as ssh does for its keys: a signing key
// that others can read is no longer the service's alone, and quietly using it would
// make every receipt worth less. The error says how to fix the mode. The check is
// skipped on Windows, whose files have no such mode bits.
//
// A missing file is an error wrapping fs.ErrNotExist.
func LoadSigningKey(path string) (*SigningKey, error) {
	text, err := secretfile.ReadKey(path, maxKeyFileBytes)
	if err != nil {
		return nil, fmt.Errorf("crypto: signing key: %w", err)
	}
	k, err := ParseSigningKey(text)
	if err != nil {
		return nil, fmt.Errorf("crypto: signing key %s: %v", path, err)
	}
	return k, nil
}

// LoadOrCreateSigningKey loads dir/signing.key, or on first start generates a key and
// writes it there with mode 0600, creating dir (mode 0700) if needed. created reports
// that the key is new, so that the caller can log its id once. A file that exists but
// cannot be used (corrupt, too open) is an error: replacing it would silently change
// the key that every earlier receipt names.
func LoadOrCreateSigningKey(dir string) (key *SigningKey, created bool, err error) {
	path := filepath.Join(dir, SigningKeyFile)
	k, err := LoadSigningKey(path)
	if err == nil {
		return k, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("crypto: signing key: %w", err)
	}
	k, err = GenerateSigningKey()
	if err != nil {
		return nil, false, err
	}
	err = WriteSigningKeyFile(path, k)
	if errors.Is(err, fs.ErrExist) {
		// Another process started on the same folder and won the race: use its key.
		k, err = LoadSigningKey(path)
		return k, false, err
	}
	if err != nil {
		return nil, false, err
	}
	return k, true, nil
}

// WriteSigningKeyFile writes k to a new file at path with mode 0600. It never replaces
// an existing file (the error then wraps fs.ErrExist), and the file appears whole or not
// at all: the key is written to a temporary file in the same folder, synced, and linked
// into place, so that a crash cannot leave a truncated key that the next start would
// refuse.
func WriteSigningKeyFile(path string, k *SigningKey) error {
	if err := secretfile.WriteNew(path, k.EncodeFile()); err != nil {
		return fmt.Errorf("crypto: write signing key: %w", err)
	}
	return nil
}

// StripComments drops the lines of a key file that start with "#", blanks before it
// allowed: the header that says what the file is, for a reader and for intentctl.
func StripComments(text []byte) []byte {
	if !bytes.Contains(text, []byte("#")) {
		return text
	}
	var out []byte
	for line := range bytes.Lines(text) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}
