package proof

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
)

// testWitness is a witness key made with torchwood's cosignature signer, the one
// litewitness signs with, so that the verifier here is checked against another
// implementation of C2SP tlog-cosignature.
type testWitness struct {
	signer *torchwood.CosignatureSigner
	vkey   string
}

func newTestWitness(t testing.TB, name string) testWitness {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := torchwood.NewCosignatureSigner(name, priv)
	if err != nil {
		t.Fatal(err)
	}
	return testWitness{signer: s, vkey: s.Verifier().String()}
}

// testCheckpoint is a log's note signer, its verifier key and a checkpoint it signed.
func testCheckpoint(t testing.TB) (note.Signer, string, []byte) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, "log.example.com/intentd")
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	text := "log.example.com/intentd\n7\n" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n"
	signed, err := note.Sign(&note.Note{Text: text}, s)
	if err != nil {
		t.Fatal(err)
	}
	return s, vkey, signed
}

// cosign adds the witnesses' cosignature lines to a signed note.
func cosign(t testing.TB, signed []byte, ws ...testWitness) []byte {
	t.Helper()
	text, _, _ := strings.Cut(string(signed), "\n\n")
	out := slices.Clone(signed)
	for _, w := range ws {
		c, err := note.Sign(&note.Note{Text: text + "\n"}, w.signer)
		if err != nil {
			t.Fatal(err)
		}
		_, line, _ := strings.Cut(string(c), "\n\n")
		out = append(out, line...)
	}
	return out
}

func TestParsePolicy(t *testing.T) {
	a, b, c := newTestWitness(t, "a.example"), newTestWitness(t, "b.example"), newTestWitness(t, "c.example")
	_, logKey, _ := testCheckpoint(t)
	head := fmt.Sprintf("log %s\nwitness A %s https://a.example/w\nwitness B %s\nwitness C %s http://c.example:7380\n", logKey, a.vkey, b.vkey, c.vkey)
	_, plainVkey, _ := note.GenerateKey(rand.Reader, "plain.example")
	tests := []struct {
		name   string
		policy string
		err    string // a part of the error; empty: parses
		none   bool
	}{
		{name: "two of three", policy: head + "group g 2 A B C\nquorum g\n"},
		{name: "any", policy: head + "group g any A B C\nquorum g\n"},
		{name: "all", policy: head + "# comment\n\ngroup g all A B C\nquorum g\n"},
		{name: "nested", policy: head + "group ab any A B\ngroup g 2 ab C\nquorum g\n"},
		{name: "one witness", policy: head + "quorum A\n"},
		{name: "none", policy: head + "quorum none\n", none: true},
		{name: "no quorum", policy: head, err: "no quorum line"},
		{name: "two quorums", policy: head + "quorum A\nquorum B\n", err: "line 6: a second quorum line"},
		{name: "unknown keyword", policy: "witnesses A " + a.vkey + "\n", err: "line 1: unknown keyword"},
		{name: "threshold too high", policy: head + "group g 4 A B C\nquorum g\n", err: "threshold \"4\""},
		{name: "threshold zero", policy: head + "group g 0 A B C\nquorum g\n", err: "threshold \"0\""},
		{name: "threshold spelled", policy: head + "group g 02 A B C\nquorum g\n", err: "threshold \"02\""},
		{name: "member later", policy: head + "group g 1 A D\nwitness D " + a.vkey + "\nquorum g\n", err: "member \"D\""},
		{name: "member twice", policy: head + "group g 1 A A\nquorum g\n", err: "member \"A\" twice"},
		{name: "name twice", policy: head + "witness A " + newTestWitness(t, "d").vkey + "\nquorum A\n", err: "already"},
		{name: "key twice", policy: head + "witness D " + a.vkey + "\nquorum A\n", err: "the key of witness A again"},
		{name: "quorum unknown", policy: head + "quorum Z\n", err: "quorum \"Z\""},
		{name: "plain Ed25519 witness key", policy: "witness P " + plainVkey + "\nquorum P\n", err: "algorithm 0x01"},
		{name: "bad key", policy: "witness P nonsense\nquorum P\n", err: "not a note verifier key"},
		{name: "bad hash", policy: "witness P " + a.vkey[:len("a.example+")] + "00000000" + a.vkey[len("a.example+00000000"):] + "\nquorum P\n", err: "its hash"},
		{name: "bad URL", policy: "witness P " + a.vkey + " ftp://x\nquorum P\n", err: "URL"},
		{name: "bad log key", policy: "log nonsense\nquorum none\n", err: "log key"},
		{name: "witness named none", policy: "witness none " + a.vkey + "\nquorum none\n", err: "not \"none\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tt.policy))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParsePolicy = %v, want an error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePolicy: %v", err)
			}
			if p.QuorumNone() != tt.none {
				t.Errorf("QuorumNone = %v", p.QuorumNone())
			}
		})
	}
}

func TestQuorum(t *testing.T) {
	a, b, c := newTestWitness(t, "a.example"), newTestWitness(t, "b.example"), newTestWitness(t, "c.example")
	other := newTestWitness(t, "other.example")
	_, logKey, signed := testCheckpoint(t)
	p, err := ParsePolicy(fmt.Appendf(nil, "log %s\nwitness A %s\nwitness B %s\nwitness C %s\ngroup g 2 A B C\nquorum g\n", logKey, a.vkey, b.vkey, c.vkey))
	if err != nil {
		t.Fatal(err)
	}
	forged := cosign(t, signed, a)
	forged = append(forged[:len(forged)-6], "AAAA=\n"...) // the signature's last bytes changed
	tests := []struct {
		name  string
		note  []byte
		names []string
		err   string
	}{
		{name: "uncosigned", note: signed, err: "none of the policy's witnesses"},
		{name: "one of three", note: cosign(t, signed, b), names: []string{"B"}, err: "only B"},
		{name: "two of three", note: cosign(t, signed, c, a), names: []string{"A", "C"}},
		{name: "three", note: cosign(t, signed, a, b, c), names: []string{"A", "B", "C"}},
		{name: "an unknown witness does not count", note: cosign(t, signed, a, other), names: []string{"A"}, err: "only A"},
		{name: "a forged cosignature", note: forged, err: "does not verify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names, err := p.CheckQuorum(tt.note)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("CheckQuorum = %v, %v; want an error with %q", names, err, tt.err)
				}
				if ve, ok := err.(*VerifyError); !ok || ve.Check != CheckWitnesses {
					t.Errorf("error %#v is not a VerifyError of check %s", err, CheckWitnesses)
				}
			} else if err != nil {
				t.Fatalf("CheckQuorum: %v", err)
			}
			if !slices.Equal(names, tt.names) {
				t.Errorf("cosigners %v, want %v", names, tt.names)
			}
		})
	}
}

// TestCosignatureVerifier checks that a cosignature torchwood made verifies here, with
// a time torchwood reads, and that one of another checkpoint, or cut short, does not.
func TestCosignatureVerifier(t *testing.T) {
	w := newTestWitness(t, "w.example")
	v, err := NewCosignatureVerifier(w.vkey)
	if err != nil {
		t.Fatal(err)
	}
	_, _, signed := testCheckpoint(t)
	n, err := note.Open(cosign(t, signed, w), note.VerifierList(v))
	if err != nil {
		t.Fatalf("open a cosigned checkpoint: %v", err)
	}
	if ts, err := torchwood.CosignatureTimestamp(n.Sigs[0]); err != nil || ts == 0 {
		t.Errorf("timestamp %d, %v", ts, err)
	}
	msg := []byte(n.Text)
	sig, _ := base64.StdEncoding.DecodeString(n.Sigs[0].Base64)
	if !v.Verify(msg, sig[4:]) {
		t.Fatal("Verify refuses the cosignature")
	}
	if v.Verify([]byte(strings.Replace(n.Text, "\n7\n", "\n8\n", 1)), sig[4:]) {
		t.Error("Verify accepts the cosignature of another checkpoint")
	}
	if v.Verify(msg, sig[4:70]) {
		t.Error("Verify accepts a short signature")
	}
}

func TestCheckLogKey(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	vkey, err := note.NewEd25519VerifierKey("log.example.com/intentd", pub)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePolicy([]byte("log " + vkey + "\nquorum none\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckLogKey("log.example.com/intentd", pub); err != nil {
		t.Errorf("the policy's own log: %v", err)
	}
	if err := p.CheckLogKey("log.example.com/other", pub); err == nil {
		t.Error("another origin passes")
	}
	none, _ := ParsePolicy([]byte("quorum none\n"))
	if err := none.CheckLogKey("anything", pub); err != nil {
		t.Errorf("a policy without log lines: %v", err)
	}
}

// FuzzParsePolicy feeds ParsePolicy arbitrary files: it must not panic, and a policy it
// accepts must evaluate its quorum on any set of names.
func FuzzParsePolicy(f *testing.F) {
	a := newTestWitness(f, "a.example")
	f.Add([]byte("witness A " + a.vkey + " https://a.example\nquorum A\n"))
	f.Add([]byte("witness A " + a.vkey + "\ngroup g any A\ngroup h all g A\nquorum h\n"))
	f.Add([]byte("quorum none\n"))
	f.Add([]byte("group\nquorum\nlog\nwitness\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(data)
		if err != nil {
			return
		}
		var names []string
		for _, w := range p.Witnesses {
			names = append(names, w.Name)
			if w.Verifier() == nil {
				t.Fatalf("witness %s has no verifier", w.Name)
			}
		}
		p.Satisfied(nil)
		if !p.Satisfied(names) && len(names) > 0 && p.quorum != nil && p.quorum.witness >= 0 {
			t.Fatal("every witness cosigned, and a quorum of one witness is not met")
		}
	})
}
