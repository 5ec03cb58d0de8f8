package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/secretfile"
)

// passkeyFileType marks a passkey key file, so that it is never taken for another kind.
const passkeyFileType = "intentctl-soft-passkey-p256"

// passkeyFile is a software passkey as intentctl keeps it: the P-256 private scalar
// and the relying party id and origin its assertions name.
type passkeyFile struct {
	Type       string `json:"type"`
	PrivateKey string `json:"private_key"` // Base58 of the 32-byte scalar
	PublicKey  string `json:"public_key"`  // Base58 of the uncompressed SEC1 point
	RPID       string `json:"rp_id"`
	Origin     string `json:"origin"`
}

// maxKeyFile bounds what is read of a key file; real ones are under 300 bytes.
const maxKeyFile = 4 << 10

// The first lines of the files keygen writes say what each holds, for a reader and for
// loadSigner: an Ed25519 seed and public key are both 32 bytes in Base58, and the
// content alone cannot tell one from the other. Files without them, written before,
// are still read.
const (
	privateKeyHeader = "# intentctl Ed25519 private key (the Base58 of its 32-byte seed): keep it to yourself; sign with --key FILE"
	publicKeyHeader  = "# intentctl public key (Base58), not a private key: give it to those who check your signatures"
)

func (c *cli) keygen(args []string) error {
	flags := c.flags("keygen")
	out := flags.String("o", "", "file of the private key (default intentctl.key, or intentctl.passkey with --passkey); FILE.pub gets the public key")
	passkey := flags.Bool("passkey", false, "make a software P-256 passkey (WebAuthn assertions) instead of an Ed25519 key; for tests and demos")
	rpID := flags.String("rp-id", "localhost", "with --passkey: the relying party id its assertions carry")
	origin := flags.String("origin", "http://localhost", "with --passkey: the origin its client data names")
	pos, err := c.parse(flags, args)
	if err != nil {
		return err
	}
	if err := want(pos, 0, "no arguments"); err != nil {
		return err
	}
	path := *out
	if path == "" {
		path = "intentctl.key"
		if *passkey {
			path = "intentctl.passkey"
		}
	}

	var pubText string
	if *passkey {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		priv, err := key.Bytes()
		if err != nil {
			return err
		}
		pub, err := key.PublicKey.Bytes()
		if err != nil {
			return err
		}
		pubText = crypto.EncodeBase58(pub)
		b, _ := json.MarshalIndent(passkeyFile{Type: passkeyFileType, PrivateKey: crypto.EncodeBase58(priv), PublicKey: pubText, RPID: *rpID, Origin: *origin}, "", "  ")
		if err := writeNewFile(path, append(b, '\n'), 0o600); err != nil {
			return err
		}
	} else {
		key, err := crypto.GenerateSigningKey()
		if err != nil {
			return err
		}
		// The service's key file form under a header line: intentd --signing-key
		// reads it too.
		if err := secretfile.WriteNew(path, append([]byte(privateKeyHeader+"\n"), key.EncodeFile()...)); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s exists; keygen never replaces a key file, choose another -o", path)
			}
			return err
		}
		pubText = crypto.EncodeBase58(key.PublicKey())
	}
	if err := writeNewFile(path+".pub", []byte(publicKeyHeader+"\n"+pubText+"\n"), 0o644); err != nil {
		return err
	}
	if c.g.json {
		kind := "ed25519"
		if *passkey {
			kind = "passkey-p256"
		}
		return c.printJSON(map[string]string{"type": kind, "private_key_file": path, "public_key_file": path + ".pub", "public_key": pubText})
	}
	fmt.Fprintf(c.stdout, "private key: %s (mode 0600)\npublic key:  %s\n%s\n", path, path+".pub", pubText)
	return nil
}

// writeNewFile writes a file that must not exist yet.
func writeNewFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists; keygen never replaces a key file, choose another -o", path)
		}
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readPrivateFile reads a private key file, refusing one that group or others may
// access: a signature by a key others can read proves little.
func readPrivateFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("%s: mode %04o lets group or others read the key; run chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("%s: larger than %d bytes, not a key file", path, maxKeyFile)
	}
	return b, nil
}

// signer signs an intent: an Ed25519 key or a software passkey.
type signer interface {
	// sign returns the signature of the intent's JSON.
	sign(intent []byte) (*crypto.Signature, error)
	// publicKey is the key a multisig lists the signer under.
	publicKey() []byte
}

type ed25519Signer struct{ priv ed25519.PrivateKey }

func (s ed25519Signer) sign(intent []byte) (*crypto.Signature, error) {
	a, err := crypto.SignEd25519(s.priv, intent)
	if err != nil {
		return nil, err
	}
	return a.Signature, nil
}

func (s ed25519Signer) publicKey() []byte { return s.priv.Public().(ed25519.PublicKey) }

type passkeySigner struct{ p *crypto.SoftPasskey }

func (s passkeySigner) sign(intent []byte) (*crypto.Signature, error) {
	a, err := s.p.Sign(intent)
	if err != nil {
		return nil, err
	}
	return a.Signature, nil
}

func (s passkeySigner) publicKey() []byte { return s.p.PublicKey() }

// loadSigner reads a key file of either kind; wantKind, when set, is the only kind
// accepted ("ed25519" or "passkey").
func loadSigner(path, wantKind string) (signer, error) {
	// What the file is comes before how it is kept: a public key given by mistake
	// must not be taken for a seed once its mode is made private, and the advice to
	// chmod a file that is no private key at all would point the wrong way.
	if err := whatKeyFile(path, wantKind); err != nil {
		return nil, err
	}
	b, err := readPrivateFile(path)
	if err != nil {
		return nil, err
	}
	// whatKeyFile read the file before: its header is checked again on the bytes
	// that are used, in case the file changed in between.
	if err := headerKind(path, b, wantKind); err != nil {
		return nil, err
	}
	text := bytes.TrimSpace(crypto.StripComments(b))
	if bytes.HasPrefix(text, []byte("{")) {
		if wantKind == "ed25519" {
			return nil, fmt.Errorf("%s is a passkey file; use --passkey", path)
		}
		return parsePasskey(path, text)
	}
	if wantKind == "passkey" {
		return nil, fmt.Errorf("%s is not a passkey file (make one with intentctl keygen --passkey)", path)
	}
	// Errors never quote the contents, which may be a key.
	seed, err := crypto.DecodeBase58(string(text))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s: not an Ed25519 key file (want the Base58 of a 32-byte seed, as intentctl keygen writes)", path)
	}
	return ed25519Signer{ed25519.NewKeyFromSeed(seed)}, nil
}

// whatKeyFile refuses, whatever its mode, a file given where a private key of
// wantKind is wanted that is something else: a public key, a key of the other kind, a
// person's key where an agent's is wanted (wantKind "agent") or an agent's where a
// person's is, a PEM file, or no key at all, saying what it is and what to pass. An
// Ed25519 public key and a seed are both 32 bytes in Base58: keygen's header line tells
// them apart, and for files without one, keygen's .pub name, or the same text in a .pub
// file beside it.
func whatKeyFile(path, wantKind string) error {
	if priv, ok := strings.CutSuffix(path, ".pub"); ok {
		return publicKeyGiven(path, priv, wantKind)
	}
	text, err := os.ReadFile(path)
	if err != nil || len(text) > maxKeyFile {
		return nil // readPrivateFile says what is wrong
	}
	if err := headerKind(path, text, wantKind); err != nil {
		return err
	}
	if what := otherKind(text); what != "" {
		if wantKind == "agent" {
			return fmt.Errorf("%s is %s, not a private key: sign with the agent's private key file, which intentctl agent keygen wrote", path, what)
		}
		return fmt.Errorf("%s is %s, not a private key: sign with the private key file intentctl keygen wrote (--key FILE for an Ed25519 key, --passkey FILE for a passkey)", path, what)
	}
	text = bytes.TrimSpace(crypto.StripComments(text))
	if bytes.HasPrefix(text, []byte("{")) {
		switch wantKind {
		case "agent":
			return fmt.Errorf("%s is a passkey file, which signs a person's intents: an agent signs proposals with an Ed25519 key of its own, made by intentctl agent keygen", path)
		case "ed25519":
			return fmt.Errorf("%s is a passkey file; use --passkey", path)
		}
		return nil // parsePasskey says what is wrong with it
	}
	if wantKind == "passkey" {
		return fmt.Errorf("%s is not a passkey file (make one with intentctl keygen --passkey; an Ed25519 key goes with --key)", path)
	}
	if b, err := crypto.DecodeBase58(string(text)); err != nil || len(b) != ed25519.PublicKeySize {
		if wantKind == "agent" {
			return fmt.Errorf("%s is not a key file: it holds no Ed25519 seed; sign with the agent's private key file, which intentctl agent keygen wrote", path)
		}
		return fmt.Errorf("%s is not a key file: it holds neither an Ed25519 seed nor a passkey; sign with the private key file intentctl keygen wrote (--key FILE, or --passkey FILE for a passkey)", path)
	}
	pubs, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.pub"))
	for _, pub := range pubs {
		if p, err := os.ReadFile(pub); err == nil && bytes.Equal(bytes.TrimSpace(crypto.StripComments(p)), text) {
			return fmt.Errorf("%s holds the public key of %s: it is a public key, not a private one; sign with the private key file keygen wrote beside %[2]s", path, pub)
		}
	}
	return nil
}

// headerKind refuses a key file whose header line shows it is a person's key where an
// agent's is wanted, or an agent's where a person's is: each signs what the other must
// not. A person's key given to an agent would let the agent sign intents as the person.
func headerKind(path string, text []byte, wantKind string) error {
	t := bytes.TrimSpace(text)
	switch {
	case wantKind == "agent" && bytes.HasPrefix(t, []byte(privateKeyHeader)):
		return fmt.Errorf("%s is a person's intent key (intentctl keygen): an agent signs with a key of its own, made by intentctl agent keygen, which the intent then delegates to", path)
	case wantKind != "agent" && bytes.HasPrefix(t, []byte(agentKeyHeader)):
		return fmt.Errorf("%s is an agent's key (intentctl agent keygen), which signs proposals (--agent-key): sign intents with the person's own key (intentctl keygen)", path)
	}
	return nil
}

// publicKeyGiven is the refusal of a .pub file given as a private key. It names the
// file without .pub to pass instead, unless that file's header shows it is of the
// other role (a person's key where an agent's is wanted, or the reverse): then it says
// so, rather than lead to the next refusal.
func publicKeyGiven(path, priv, wantKind string) error {
	var head []byte
	if f, err := os.Open(priv); err == nil {
		head, _ = io.ReadAll(io.LimitReader(f, maxKeyFile))
		f.Close()
	}
	head = bytes.TrimSpace(head)
	switch {
	case wantKind == "agent" && bytes.HasPrefix(head, []byte(privateKeyHeader)):
		return fmt.Errorf("%s is the public key of %s, a person's intent key (intentctl keygen): an agent signs with a key of its own, made by intentctl agent keygen, which the intent then delegates to", path, priv)
	case wantKind != "agent" && bytes.HasPrefix(head, []byte(agentKeyHeader)):
		return fmt.Errorf("%s is the public key of %s, an agent's key (intentctl agent keygen), which signs proposals (--agent-key): sign intents with the person's own key (intentctl keygen)", path, priv)
	}
	flag := "--key"
	switch wantKind {
	case "agent":
		flag = "--agent-key"
	case "passkey":
		flag = "--passkey"
	}
	return fmt.Errorf("%s is a public key (keygen writes it beside the private key): sign with %s %s, the file without .pub", path, flag, priv)
}

// otherKind names what a file given as a private key is when its first line shows it is
// something else: a public key (by keygen's header), a PEM file or an ssh public key.
// It is "" for a file that may be a private key.
func otherKind(text []byte) string {
	t := bytes.TrimSpace(text)
	switch {
	case bytes.HasPrefix(t, []byte(publicKeyHeader)):
		return "a public key (its first line says so)"
	case bytes.HasPrefix(t, []byte("-----BEGIN ")):
		line, _, _ := bytes.Cut(t, []byte("\n"))
		return fmt.Sprintf("a PEM file (%s), a TLS key or certificate such as intentctl certs writes", bytes.TrimSpace(line))
	case bytes.HasPrefix(t, []byte("ssh-")):
		return "an ssh public key"
	}
	return ""
}

func parsePasskey(path string, text []byte) (signer, error) {
	var pf passkeyFile
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pf); err != nil || pf.Type != passkeyFileType {
		return nil, fmt.Errorf("%s: not a passkey file (want the JSON intentctl keygen --passkey writes)", path)
	}
	scalar, err := crypto.DecodeBase58(pf.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("%s: private_key is not Base58", path)
	}
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), scalar)
	if err != nil {
		return nil, fmt.Errorf("%s: private_key is not a P-256 private key", path)
	}
	if pub, _ := key.PublicKey.Bytes(); pf.PublicKey != "" && crypto.EncodeBase58(pub) != pf.PublicKey {
		return nil, fmt.Errorf("%s: public_key is not that of private_key", path)
	}
	p, err := crypto.NewSoftPasskey(key, pf.RPID, pf.Origin)
	if err != nil {
		return nil, err
	}
	return passkeySigner{p}, nil
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}
