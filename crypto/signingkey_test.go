package crypto

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestLoadOrCreateSigningKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, created, err := LoadOrCreateSigningKey(dir)
	if err != nil {
		t.Fatalf("first start: %v", err)
	}
	if !created {
		t.Error("first start: created = false, want true")
	}
	path := filepath.Join(dir, SigningKeyFile)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("key file mode %04o, want 0600", perm)
		}
		if dinfo, err := os.Stat(dir); err != nil || dinfo.Mode().Perm() != 0o700 {
			t.Errorf("data folder: %v, mode %04o; want 0700", err, dinfo.Mode().Perm())
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("data folder holds %v (%v), want the key file alone", entries, err)
	}

	second, created, err := LoadOrCreateSigningKey(dir)
	if err != nil {
		t.Fatalf("second start: %v", err)
	}
	if created {
		t.Error("second start: created = true, want false")
	}
	if !second.PublicKey().Equal(first.PublicKey()) || second.ID() != first.ID() {
		t.Errorf("second start loaded key %s, want the first start's %s", second.ID(), first.ID())
	}
	msg := []byte("receipt bytes")
	if !ed25519.Verify(first.PublicKey(), msg, second.Sign(msg)) {
		t.Error("the reloaded key's signature does not verify under the first key")
	}
}

func TestLoadOrCreateSigningKeyKeepsABadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, SigningKeyFile)
	if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateSigningKey(dir); err == nil || !strings.Contains(err.Error(), "not Base58") {
		t.Fatalf("LoadOrCreateSigningKey: %v, want the corrupt file refused", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "not a key" {
		t.Errorf("the corrupt file was changed to %q; it must be left for the operator", got)
	}
}

func TestLoadSigningKey(t *testing.T) {
	key := testSigningKey(t, "file")
	good := key.EncodeFile()
	tests := []struct {
		name    string
		content []byte
		mode    fs.FileMode
		wantErr string // empty: loads key
	}{
		{"as written", good, 0o600, ""},
		{"read-only", good, 0o400, ""},
		{"no newline", bytes.TrimSpace(good), 0o600, ""},
		{"surrounding whitespace", []byte("\n  " + string(bytes.TrimSpace(good)) + " \r\n\n"), 0o600, ""},
		{"empty", nil, 0o600, "empty"},
		{"blank", []byte(" \n"), 0o600, "empty"},
		{"not Base58", []byte("0OIl0OIl\n"), 0o600, "not Base58"},
		{"31 bytes", []byte(EncodeBase58(sha256Of("x")[:31])), 0o600, "decodes to 31 bytes"},
		{"64-byte private key", []byte(EncodeBase58(ed25519.NewKeyFromSeed(sha256Of("x")))), 0o600, "decodes to 64 bytes"},
		{"two keys", append(append([]byte{}, good...), good...), 0o600, "not Base58"},
		{"too large", bytes.Repeat([]byte("1"), 2000), 0o600, "larger than"},
		{"readable by others", good, 0o644, "chmod 600"},
		{"readable by group", good, 0o640, "chmod 600"},
		{"writable by others", good, 0o602, "chmod 600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if runtime.GOOS == "windows" && strings.Contains(tt.wantErr, "chmod") {
				t.Skip("no mode bits on Windows")
			}
			path := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(path, tt.content, tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil { // past the umask
				t.Fatal(err)
			}
			got, err := LoadSigningKey(path)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("LoadSigningKey: %v", err)
				}
				if got.ID() != key.ID() {
					t.Fatalf("loaded key %s, want %s", got.ID(), key.ID())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("LoadSigningKey: %v, want an error containing %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			if s := strings.TrimSpace(string(good)); strings.Contains(err.Error(), s) {
				t.Errorf("error %q quotes the key", err)
			}
		})
	}
}

func TestLoadSigningKeyNotAFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadSigningKey(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigningKey(sub); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("folder: %v, want it refused as not a regular file", err)
	}
}

func TestWriteSigningKeyFileNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "service.key")
	first, second := testSigningKey(t, "first"), testSigningKey(t, "second")
	if err := WriteSigningKeyFile(path, first); err != nil {
		t.Fatal(err)
	}
	if err := WriteSigningKeyFile(path, second); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write: %v, want fs.ErrExist", err)
	}
	got, err := LoadSigningKey(path)
	if err != nil || got.ID() != first.ID() {
		t.Fatalf("after a refused write the file holds %v (%v), want %s", got, err, first.ID())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("folder holds %d entries, want no temporary file left", len(entries))
	}
}

func TestSigningKeyDoesNotPrintItsSeed(t *testing.T) {
	key := testSigningKey(t, "secret")
	seed := EncodeBase58(sha256Of("signing secret"))
	for _, verb := range []string{"%v", "%+v", "%s", "%#v"} {
		out := fmt.Sprintf(verb, key)
		if strings.Contains(out, seed) || !strings.Contains(out, key.ID()) {
			t.Errorf("%s prints %q, want the key id and not the seed", verb, out)
		}
	}
}

func TestKeyID(t *testing.T) {
	a, b := testSigningKey(t, "a"), testSigningKey(t, "b")
	if a.ID() == b.ID() {
		t.Fatal("two keys share an id")
	}
	if a.ID() != KeyID(a.PublicKey()) || checkDigest(a.ID()) != nil {
		t.Fatalf("ID %q, want KeyID of the public key, a Base58 digest", a.ID())
	}
	if _, err := NewSigningKey(make([]byte, 31)); err == nil {
		t.Fatal("NewSigningKey accepted a 31-byte seed")
	}
	g1, err1 := GenerateSigningKey()
	g2, err2 := GenerateSigningKey()
	if err1 != nil || err2 != nil || g1.ID() == g2.ID() {
		t.Fatalf("GenerateSigningKey: %v, %v; two keys %v and %v must differ", err1, err2, g1, g2)
	}
}

// FuzzParseSigningKey checks that any key file content either fails without quoting
// itself or gives a key that writes back to a file that parses to the same key.
func FuzzParseSigningKey(f *testing.F) {
	f.Add(testSigningKey(f, "fuzz").EncodeFile())
	f.Add([]byte(" 11111111111111111111111111111111\n"))
	f.Add([]byte("0OIl"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, text []byte) {
		k, err := ParseSigningKey(text)
		if err != nil {
			if s := strings.TrimSpace(string(text)); len(s) > 8 && strings.Contains(err.Error(), s) {
				t.Fatalf("error %q quotes the input", err)
			}
			return
		}
		back, err := ParseSigningKey(k.EncodeFile())
		if err != nil || back.ID() != k.ID() {
			t.Fatalf("re-parse: %v, %v; want %v", back, err, k)
		}
	})
}
