package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/syncbuf"
	"github.com/intentd/intentd/proof"
)

// serviceKey reads the service's public key from GET /info and checks that its key id
// is the one the key gives.
func (s *testServer) serviceKey() (ed25519.PublicKey, string) {
	s.t.Helper()
	r := s.do("GET", "/info", "", nil)
	var info struct {
		PublicKey string `json:"public_key"`
		KeyID     string `json:"key_id"`
	}
	if err := json.Unmarshal(r.body, &info); err != nil || r.status != http.StatusOK {
		s.t.Fatalf("GET /info: %s (%v)", r, err)
	}
	pub, err := crypto.DecodeBase58(info.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		s.t.Fatalf("GET /info public_key %q is not the Base58 of a 32-byte key (%v)", info.PublicKey, err)
	}
	if id := crypto.KeyID(pub); info.KeyID != id {
		s.t.Fatalf("GET /info key_id = %q, the public key's id is %q", info.KeyID, id)
	}
	return pub, info.KeyID
}

// proofError asks for a proof that must not exist and returns the 404's code.
func (s *testServer) proofError(id string) string {
	s.t.Helper()
	r := s.do("GET", "/intents/"+id+"/proof", "", nil)
	if r.status != http.StatusNotFound {
		s.t.Fatalf("GET proof of %s: %s, want 404", id, r)
	}
	code, _ := r.errorBody(s.t)
	return code
}

// TestProof decides intents every way an intent can end and checks the proof route:
// the decided ones give bundles that verify under the key /info serves, the others the
// 404 that says why there is none.
func TestProof(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	pub, keyID := s.serviceKey()

	decided := []struct {
		name, solution string
		outcome        intentd.State
		failures       int
	}{
		{"success", solutionPasses, intentd.StateSuccess, 0},
		{"constraint failure", solutionBlackL, intentd.StateFailure, 3},
	}
	for _, tt := range decided {
		t.Run(tt.name, func(t *testing.T) {
			id := s.submit()
			if r := s.propose(id, tt.solution); r.status != http.StatusOK {
				t.Fatalf("propose: %s", r)
			}
			s.waitStatus(id, string(tt.outcome))
			r := s.do("GET", "/intents/"+id+"/proof", "", nil)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
				t.Fatalf("GET proof: %s (%s)", r, r.header.Get("Content-Type"))
			}
			rep, err := proof.Verify(r.body, pub)
			if err != nil {
				t.Fatalf("the bundle does not verify under the key of /info: %v\n%s", err, r.body)
			}
			if rep.IntentID != id || rep.PolicyID != s.policy || rep.Outcome != tt.outcome ||
				len(rep.Failures) != tt.failures || rep.KeyID != keyID || !rep.KeyTrusted || rep.Authorship != "Ed25519" {
				t.Fatalf("report = %+v, want intent %s, policy %s, %s with %d failures, key %s trusted, Ed25519",
					rep, id, s.policy, tt.outcome, tt.failures, keyID)
			}

			// A bundle that verifies only under its own key is not the service's.
			_, other, _ := ed25519.GenerateKey(nil)
			var ve *proof.VerifyError
			if _, err := proof.Verify(r.body, other.Public().(ed25519.PublicKey)); !errors.As(err, &ve) || ve.Check != proof.CheckKey {
				t.Fatalf("VerifyProof under another key: %v, want a failed %s check", err, proof.CheckKey)
			}
		})
	}

	notFound := []struct {
		name  string
		setup func(t *testing.T) string
		code  string
	}{
		{"open", func(t *testing.T) string { return s.submit() }, intentd.CodeProofNotReady},
		{"unknown", func(t *testing.T) string { return uuid.NewString() }, intentd.CodeIntentNotFound},
		{"malformed id", func(t *testing.T) string { return "not-a-uuid" }, intentd.CodeIntentNotFound},
		{"extraction failure", func(t *testing.T) string {
			id := s.submit()
			s.propose(id, solutionUnknown)
			s.waitStatus(id, "failure")
			return id
		}, intentd.CodeNoProof},
		{"expired", func(t *testing.T) string {
			short := startServer(t, []string{"--intent-ttl", "200ms"})
			id := short.submit()
			short.waitStatus(id, "expired")
			if code := short.proofError(id); code != intentd.CodeNoProof {
				t.Fatalf("proof of an expired intent: code %s, want %s", code, intentd.CodeNoProof)
			}
			return ""
		}, intentd.CodeNoProof},
	}
	for _, tt := range notFound {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.setup(t)
			if id == "" {
				return // checked on its own server
			}
			if code := s.proofError(id); code != tt.code {
				t.Fatalf("proof of %s: code %s, want %s", id, code, tt.code)
			}
		})
	}
}

// TestSigningKey checks where the key comes from: made in the data folder on first
// start (mode 0600) and the same after a restart, so that earlier proofs still verify
// under the key /info serves; or read from --signing-key (or its variable), refusing a
// file others may read.
func TestSigningKey(t *testing.T) {
	t.Parallel()
	t.Run("data folder, across a restart", testKeyAcrossRestart)
	t.Run("lost from a store with outcomes", testKeyLost)
	t.Run("changed under a log of outcomes", testKeyChangedUnderOutcomes)
	t.Run("changed under a log of no outcomes", testKeyChangedUnderNoOutcomes)
	testKeyFromFile(t)
}

// testKeyAcrossRestart checks the key made in the data folder: mode 0600, and the same
// after a restart, so that earlier proofs verify under it.
func testKeyAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServerIn(t, dir, nil)
	pub, keyID := s.serviceKey()
	fi, err := os.Stat(filepath.Join(dir, crypto.SigningKeyFile))
	if err != nil {
		t.Fatalf("no key file in the data folder: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", perm)
	}
	id := s.submit()
	s.propose(id, solutionPasses)
	s.waitStatus(id, "success")
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}

	s = startServerIn(t, dir, nil)
	pub2, keyID2 := s.serviceKey()
	if !pub.Equal(pub2) || keyID != keyID2 {
		t.Fatalf("after a restart the key is %s, before it was %s", keyID2, keyID)
	}
	r := s.do("GET", "/intents/"+id+"/proof", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET proof after a restart: %s", r)
	}
	if _, err := proof.Verify(r.body, pub2); err != nil {
		t.Fatalf("a proof made before the restart does not verify under the key after it: %v", err)
	}
}

// testKeyLost removes the key file of a store with outcomes: the start is refused
// until --rotate-signing-key makes a new key, under which the old receipts do not verify.
func testKeyLost(t *testing.T) {
	dir := t.TempDir()
	s := startServerIn(t, dir, nil)
	_, oldID := s.serviceKey()
	id := s.submit()
	s.propose(id, solutionPasses)
	s.waitStatus(id, "success")
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, crypto.SigningKeyFile)
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}

	err := runRefused(t, []string{"--listen", "127.0.0.1:0", "--data", dir})
	if err == nil || !strings.Contains(err.Error(), keyFile) || !strings.Contains(err.Error(), "--rotate-signing-key") {
		t.Fatalf("Run without the key file: %v, want a refusal naming %s and --rotate-signing-key", err, keyFile)
	}
	if _, err := os.Stat(keyFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused start made a key file anyway (%v)", err)
	}

	s = startServerIn(t, dir, []string{"--rotate-signing-key"})
	pub, newID := s.serviceKey()
	if newID == oldID {
		t.Fatalf("the rotated key has the old id %s", newID)
	}
	r := s.do("GET", "/intents/"+id+"/proof", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET proof after rotation: %s", r)
	}
	if _, err := proof.Verify(r.body, pub); err == nil {
		t.Fatal("a receipt of the old key verifies under the new one")
	}
	if _, err := proof.Verify(r.body, nil); err != nil {
		t.Fatalf("the old receipt no longer verifies under its own key: %v", err)
	}
}

// testKeyChangedUnderOutcomes changes the key file of a server whose log holds
// outcomes: the start is refused until --rotate-signing-key says the change is meant.
func testKeyChangedUnderOutcomes(t *testing.T) {
	dir := t.TempDir()
	s := startServerIn(t, dir, nil)
	s.decideMany(1)
	s.logReader().waitCheckpoint(t, 1)
	_, oldID := s.serviceKey()
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, crypto.SigningKeyFile)
	newID := garbleKeyFile(t, keyFile)

	err := runRefused(t, []string{"--listen", "127.0.0.1:0", "--data", dir})
	tlogDir := filepath.Join(dir, "tlog")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), keyFile) || !strings.Contains(err.Error(), tlogDir) ||
		!strings.Contains(err.Error(), "intentd/"+oldID) || !strings.Contains(err.Error(), "--rotate-signing-key") {
		t.Fatalf("Run with a changed key file: %v, want one line naming %s, %s, the old origin and --rotate-signing-key", err, keyFile, tlogDir)
	}

	// On purpose: the log goes on under the new key, and says so.
	s = startServerIn(t, dir, []string{"--rotate-signing-key"})
	if _, id := s.serviceKey(); id != newID {
		t.Fatalf("/info key_id %s, want the changed file's %s", id, newID)
	}
	s.logReader().waitCheckpoint(t, 1)
	if !strings.Contains(s.logs.String(), "signed by another key") {
		t.Fatalf("the change of key was not logged:\n%s", s.logs)
	}
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}
	s = startServerIn(t, dir, nil) // the flag is needed once
	s.logReader().waitCheckpoint(t, 1)
}

// testKeyChangedUnderNoOutcomes changes the key file of a server whose log holds no
// outcome: it starts with the new key, the flag not needed.
func testKeyChangedUnderNoOutcomes(t *testing.T) {
	dir := t.TempDir()
	s := startServerIn(t, dir, nil)
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}
	newID := garbleKeyFile(t, filepath.Join(dir, crypto.SigningKeyFile))
	s = startServerIn(t, dir, nil)
	if _, id := s.serviceKey(); id != newID {
		t.Fatalf("/info key_id %s, want the changed file's %s", id, newID)
	}
	s.logReader().waitCheckpoint(t, 0)
}

// testKeyFromFile checks a key read from --signing-key or INTENTD_SIGNING_KEY, and the
// files refused as keys.
func testKeyFromFile(t *testing.T) {
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "service.key")
	if err := crypto.WriteSigningKeyFile(file, key); err != nil {
		t.Fatal(err)
	}
	t.Run("flag", func(t *testing.T) {
		dir := t.TempDir()
		s := startServerIn(t, dir, []string{"--signing-key", file})
		if _, id := s.serviceKey(); id != key.ID() {
			t.Fatalf("/info key_id %s, want the file's %s", id, key.ID())
		}
		if _, err := os.Stat(filepath.Join(dir, crypto.SigningKeyFile)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("with --signing-key a key was made in the data folder too (%v)", err)
		}
	})
	t.Run("flag naming another key under a log of outcomes", func(t *testing.T) {
		dir := t.TempDir()
		s := startServerIn(t, dir, nil)
		s.decideMany(1)
		s.logReader().waitCheckpoint(t, 1)
		if err := s.m.Close(); err != nil {
			t.Fatal(err)
		}
		s = startServerIn(t, dir, []string{"--signing-key", file})
		if _, id := s.serviceKey(); id != key.ID() {
			t.Fatalf("/info key_id %s, want the file's %s", id, key.ID())
		}
		s.logReader().waitCheckpoint(t, 1)
		if !strings.Contains(s.logs.String(), "signed by another key") {
			t.Fatalf("the change of key was not logged:\n%s", s.logs)
		}
	})
	t.Run("variable", func(t *testing.T) {
		m := NewMain()
		m.Stderr = &syncbuf.Buffer{}
		m.LookupEnv = func(k string) (string, bool) { return file, k == "INTENTD_SIGNING_KEY" }
		if err := m.ParseFlags(nil); err != nil || m.Config.SigningKey != file {
			t.Fatalf("INTENTD_SIGNING_KEY: config %q, %v; want %q", m.Config.SigningKey, err, file)
		}
	})

	refused := []struct {
		name, want string
		setup      func(t *testing.T) string
	}{
		{"readable by others", "chmod 600", func(t *testing.T) string {
			open := filepath.Join(t.TempDir(), "open.key")
			if err := os.WriteFile(open, key.EncodeFile(), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(open, 0o644); err != nil { // past the umask
				t.Fatal(err)
			}
			return open
		}},
		{"missing", "no such file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none.key") }},
		{"not a key", "Base58", func(t *testing.T) string {
			bad := filepath.Join(t.TempDir(), "bad.key")
			if err := os.WriteFile(bad, []byte("0OIl\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return bad
		}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			err := runRefused(t, []string{"--listen", "127.0.0.1:0", "--data", t.TempDir(), "--signing-key", tt.setup(t)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// garbleKeyFile replaces a character of the Base58 key file at path with another, as a
// failing disk or a careless edit might: the file still holds a valid key, another one,
// whose id it returns.
func garbleKeyFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := []byte(strings.TrimSpace(string(b)))
	// Not the first character, whose change could make the number another length.
	i := len(text) - 2
	if text[i] == '2' {
		text[i] = '3'
	} else {
		text[i] = '2'
	}
	if err := os.WriteFile(path, append(text, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := crypto.LoadSigningKey(path)
	if err != nil {
		t.Fatalf("the changed key file: %v", err)
	}
	return key.ID()
}
