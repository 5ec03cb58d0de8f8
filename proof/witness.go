package proof

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
)

// CheckWitnesses is the check of a checkpoint's cosignatures against a witness policy.
const CheckWitnesses = "witnesses"

// WitnessPolicy is a C2SP tlog-policy: the keys a log may sign with, the witnesses
// whose cosignatures count, and the quorum of them a checkpoint needs. ParsePolicy
// reads one.
type WitnessPolicy struct {
	// LogKeys are the note verifier keys of the log lines, in file order; a checkpoint
	// must be signed by one of them when there are any.
	LogKeys []string
	// Witnesses are the witness lines, in file order.
	Witnesses []Witness
	// quorum is the witness or group a checkpoint must satisfy; nil: "quorum none".
	quorum *member
	// groups by name, and witnesses' index by name, for members.
	names map[string]*member
}

// Witness is one witness of a policy.
type Witness struct {
	// Name is the policy's name for it, which groups use.
	Name string
	// Key is its note verifier key (Ed25519 cosignature/v1), whose name is the one its
	// cosignature lines carry.
	Key string
	// URL is the prefix of its tlog-witness endpoints (URL + "/add-checkpoint"); empty
	// when the policy does not say where it is.
	URL string

	verifier note.Verifier
}

// Verifier is the note verifier of the witness's cosignatures.
func (w *Witness) Verifier() note.Verifier { return w.verifier }

// member is a witness or a group: a group is satisfied when n of its members are.
type member struct {
	witness int // index in Witnesses, or -1 for a group
	n       int
	members []*member
}

func (m *member) satisfied(ok []bool) bool {
	if m.witness >= 0 {
		return ok[m.witness]
	}
	k := 0
	for _, c := range m.members {
		if c.satisfied(ok) {
			k++
		}
	}
	return k >= m.n
}

// maxPolicy bounds a policy file: policies name a handful of witnesses.
const maxPolicy = 64 << 10

// ParsePolicy reads a C2SP tlog-policy:
//
//	log VKEY [URL]
//	witness NAME VKEY [URL]
//	group NAME N|any|all MEMBER...
//	quorum NAME|none
//
// Empty lines and lines starting with # are skipped. A group's members are witnesses
// or groups named before it; the quorum line comes once. A witness key must be an
// Ed25519 cosignature/v1 key (algorithm 0x04): ML-DSA-44 keys are refused, since no
// library this project uses verifies their cosignatures yet (docs/proofs.md). Every
// error names its line.
func ParsePolicy(data []byte) (*WitnessPolicy, error) {
	if len(data) > maxPolicy {
		return nil, fmt.Errorf("witness policy: %d bytes, more than %d", len(data), maxPolicy)
	}
	if !utf8.Valid(data) {
		return nil, errors.New("witness policy: not UTF-8 text")
	}
	p := &WitnessPolicy{names: map[string]*member{}}
	quorumSeen := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxPolicy)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		var err error
		switch f[0] {
		case "log":
			err = p.logLine(f[1:])
		case "witness":
			err = p.witnessLine(f[1:])
		case "group":
			err = p.groupLine(f[1:])
		case "quorum":
			if quorumSeen {
				err = errors.New("a second quorum line")
				break
			}
			quorumSeen = true
			err = p.quorumLine(f[1:])
		default:
			err = fmt.Errorf("unknown keyword %q: want log, witness, group or quorum", f[0])
		}
		if err != nil {
			return nil, fmt.Errorf("witness policy line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("witness policy: %w", err)
	}
	if !quorumSeen {
		return nil, errors.New("witness policy: no quorum line (write \"quorum none\" to require no cosignature)")
	}
	return p, nil
}

func (p *WitnessPolicy) logLine(f []string) error {
	if len(f) < 1 || len(f) > 2 {
		return errors.New("want: log VKEY [URL]")
	}
	if _, err := note.NewVerifier(f[0]); err != nil {
		return fmt.Errorf("log key %q: %v", f[0], err)
	}
	if len(f) == 2 {
		if err := checkURL(f[1]); err != nil {
			return err
		}
	}
	p.LogKeys = append(p.LogKeys, f[0])
	return nil
}

func (p *WitnessPolicy) witnessLine(f []string) error {
	if len(f) < 2 || len(f) > 3 {
		return errors.New("want: witness NAME VKEY [URL]")
	}
	if err := p.newName(f[0]); err != nil {
		return err
	}
	v, err := NewCosignatureVerifier(f[1])
	if err != nil {
		return fmt.Errorf("witness %s: %w", f[0], err)
	}
	for _, w := range p.Witnesses {
		if w.verifier.Name() == v.Name() && w.verifier.KeyHash() == v.KeyHash() {
			return fmt.Errorf("witness %s: the key of witness %s again", f[0], w.Name)
		}
	}
	w := Witness{Name: f[0], Key: f[1], verifier: v}
	if len(f) == 3 {
		if err := checkURL(f[2]); err != nil {
			return fmt.Errorf("witness %s: %w", f[0], err)
		}
		w.URL = strings.TrimSuffix(f[2], "/")
	}
	p.names[f[0]] = &member{witness: len(p.Witnesses)}
	p.Witnesses = append(p.Witnesses, w)
	return nil
}

func (p *WitnessPolicy) groupLine(f []string) error {
	if len(f) < 3 {
		return errors.New("want: group NAME N|any|all MEMBER [MEMBER]")
	}
	if err := p.newName(f[0]); err != nil {
		return err
	}
	g := &member{witness: -1}
	for _, name := range f[2:] {
		m, ok := p.names[name]
		if !ok {
			return fmt.Errorf("group %s: member %q is no witness or group named before it", f[0], name)
		}
		if slices.Contains(g.members, m) {
			return fmt.Errorf("group %s: member %q twice", f[0], name)
		}
		g.members = append(g.members, m)
	}
	switch f[1] {
	case "any":
		g.n = 1
	case "all":
		g.n = len(g.members)
	default:
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 || n > len(g.members) || f[1] != strconv.Itoa(n) {
			return fmt.Errorf("group %s: threshold %q: want any, all or a number from 1 to %d", f[0], f[1], len(g.members))
		}
		g.n = n
	}
	p.names[f[0]] = g
	return nil
}

func (p *WitnessPolicy) quorumLine(f []string) error {
	if len(f) != 1 {
		return errors.New("want: quorum NAME|none")
	}
	if f[0] == "none" {
		return nil
	}
	m, ok := p.names[f[0]]
	if !ok {
		return fmt.Errorf("quorum %q is no witness or group named before it", f[0])
	}
	p.quorum = m
	return nil
}

func (p *WitnessPolicy) newName(name string) error {
	if name == "none" || !validName(name) {
		return fmt.Errorf("name %q: want a word without '+', not \"none\"", name)
	}
	if _, dup := p.names[name]; dup {
		return fmt.Errorf("name %q is already a witness or group", name)
	}
	return nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("URL %q: want http:// or https:// with a host, without query or fragment", s)
	}
	return nil
}

func validName(name string) bool {
	return name != "" && strings.IndexFunc(name, unicode.IsSpace) < 0 && !strings.Contains(name, "+")
}

// QuorumNone reports whether the policy requires no cosignature at all.
func (p *WitnessPolicy) QuorumNone() bool { return p.quorum == nil }

// Satisfied reports whether the witnesses named (by Witness.Name) meet the quorum.
func (p *WitnessPolicy) Satisfied(names []string) bool {
	if p.quorum == nil {
		return true
	}
	ok := make([]bool, len(p.Witnesses))
	for i, w := range p.Witnesses {
		ok[i] = slices.Contains(names, w.Name)
	}
	return p.quorum.satisfied(ok)
}

// CheckLogKey checks that the policy names the log key of origin and pub, when it
// names log keys at all: a policy written for another log is not this one's.
func (p *WitnessPolicy) CheckLogKey(origin string, pub ed25519.PublicKey) error {
	if len(p.LogKeys) == 0 {
		return nil
	}
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return err
	}
	if !slices.Contains(p.LogKeys, vkey) {
		return fmt.Errorf("the witness policy's log lines do not name this log's key %s", vkey)
	}
	return nil
}

// Cosigners returns the names of the policy's witnesses whose cosignatures of the
// signed checkpoint verify, in policy order. Signature lines of keys the policy does
// not know are skipped; a line of a known key that does not verify is an error, as
// note.Open makes it.
func (p *WitnessPolicy) Cosigners(signed []byte) ([]string, error) {
	if len(p.Witnesses) == 0 {
		return nil, nil
	}
	vs := make([]note.Verifier, len(p.Witnesses))
	for i := range p.Witnesses {
		vs[i] = p.Witnesses[i].verifier
	}
	n, err := note.Open(signed, note.VerifierList(vs...))
	var unverified *note.UnverifiedNoteError
	if errors.As(err, &unverified) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, w := range p.Witnesses {
		for _, s := range n.Sigs {
			if s.Name == w.verifier.Name() && s.Hash == w.verifier.KeyHash() {
				names = append(names, w.Name)
				break
			}
		}
	}
	return names, nil
}

// CheckQuorum checks that the signed checkpoint carries enough valid cosignatures
// for the policy's quorum, and returns the witnesses that cosigned it. Its error
// names who cosigned and what the quorum is.
func (p *WitnessPolicy) CheckQuorum(signed []byte) ([]string, error) {
	names, err := p.Cosigners(signed)
	if err != nil {
		return nil, verifyErr(CheckWitnesses, "a cosignature does not verify: %v", err)
	}
	if !p.Satisfied(names) {
		who := "none of the policy's witnesses"
		if len(names) > 0 {
			who = "only " + strings.Join(names, ", ")
		}
		return names, verifyErr(CheckWitnesses, "the checkpoint is cosigned by %s: the witness policy's quorum is not met", who)
	}
	return names, nil
}

// algCosignatureV1 is the signed-note key algorithm of Ed25519 cosignature/v1
// (C2SP tlog-cosignature).
const algCosignatureV1 = 0x04

// NewCosignatureVerifier returns the note verifier of a witness's Ed25519
// cosignature/v1 verifier key, NAME+HASH+BASE64(0x04 || public key). Its signatures
// are the timestamp (8 bytes, big-endian Unix seconds) and the Ed25519 signature of
// "cosignature/v1\ntime <timestamp>\n" followed by the checkpoint.
func NewCosignatureVerifier(vkey string) (note.Verifier, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	hash, err1 := strconv.ParseUint(hash16, 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(key64)
	if !ok1 || !ok2 || !validName(name) || len(hash16) != 8 || err1 != nil || err2 != nil || len(key) == 0 {
		return nil, fmt.Errorf("key %q is not a note verifier key (NAME+HASH+BASE64)", vkey)
	}
	if key[0] != algCosignatureV1 {
		return nil, fmt.Errorf("key %q is of algorithm 0x%02x; only Ed25519 cosignature/v1 (0x04) cosignatures are verified", vkey, key[0])
	}
	if len(key) != 1+ed25519.PublicKeySize {
		return nil, fmt.Errorf("key %q: an Ed25519 key is %d bytes", vkey, ed25519.PublicKeySize)
	}
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write(key)
	if uint32(hash) != binary.BigEndian.Uint32(h.Sum(nil)) {
		return nil, fmt.Errorf("key %q: its hash is not the hash of its name and key", vkey)
	}
	return cosigVerifier{name: name, hash: uint32(hash), key: ed25519.PublicKey(key[1:])}, nil
}

type cosigVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v cosigVerifier) Name() string    { return v.name }
func (v cosigVerifier) KeyHash() uint32 { return v.hash }

func (v cosigVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	m := fmt.Appendf(nil, "cosignature/v1\ntime %d\n", t)
	return ed25519.Verify(v.key, append(m, msg...), sig[8:])
}
