package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sample is a whole backup of two files.
func sample(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := NewWriter(&b, Header{Store: StorePebble, Created: time.Unix(1e9, 0).UTC(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ name, body string }{
		{"CURRENT", "MANIFEST-000001\n"},
		{"sub/000005.sst", strings.Repeat("table ", 5000)},
	} {
		if err := w.Add(f.name, int64(len(f.body)), strings.NewReader(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	h, err := Extract(bytes.NewReader(sample(t)), dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.Store != StorePebble || h.Version != "test" || h.Format != Format {
		t.Errorf("header %+v", h)
	}
	got, err := os.ReadFile(filepath.Join(dir, "sub", "000005.sst"))
	if err != nil || string(got) != strings.Repeat("table ", 5000) {
		t.Errorf("sub/000005.sst: %d bytes, %v", len(got), err)
	}
}

// regzip makes a backup of members as given, for the damage no Writer makes.
func regzip(t *testing.T, members ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, m := range members {
		if err := tw.WriteHeader(&tar.Header{Name: m[0], Mode: 0o600, Size: int64(len(m[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(m[1]))
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

func TestRefused(t *testing.T) {
	whole := sample(t)
	flipped := bytes.Clone(whole)
	flipped[len(flipped)/2] ^= 0x40
	header := `{"format":1,"store":"pebble","created":"2026-01-01T00:00:00Z"}`
	for _, tc := range []struct {
		name      string
		data      []byte
		truncated bool
		want      string
	}{
		{"empty", nil, false, "the file is empty"},
		{"not gzip", []byte("PK\x03\x04 a zip file"), false, "gzip"},
		{"cut in the gzip header", whole[:5], true, "ends early"},
		{"cut in the middle", whole[:len(whole)/2], true, "ends early"},
		{"cut before the gzip trailer", whole[:len(whole)-4], true, "ends early"},
		{"a byte changed", flipped, false, ""},
		{"no sums", regzip(t, [2]string{HeaderName, header}, [2]string{"CURRENT", "x"}), true, "list of files"},
		{"no header", regzip(t, [2]string{"CURRENT", "x"}), false, "first member"},
		{"other format", regzip(t, [2]string{HeaderName, `{"format":9,"store":"pebble"}`}), false, "format 9"},
		{"other store", regzip(t, [2]string{HeaderName, `{"format":1,"store":"etcd"}`}), false, `"etcd"`},
		{"a file changed", regzip(t, [2]string{HeaderName, header}, [2]string{"CURRENT", "y"},
			[2]string{SumsName, `[{"name":"CURRENT","size":1,"sha256":"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}]`}), false, "does not match"},
		{"a file missing", regzip(t, [2]string{HeaderName, header}, [2]string{SumsName, `[{"name":"CURRENT","size":1,"sha256":"00"}]`}), false, "names 1 files"},
		{"a path outside", regzip(t, [2]string{HeaderName, header}, [2]string{"../etc/passwd", "x"}, [2]string{SumsName, `[]`}), false, "relative path"},
		{"a member after the sums", regzip(t, [2]string{HeaderName, header}, [2]string{SumsName, `[]`}, [2]string{"x", "x"}), false, "follows the list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			_, err := Extract(bytes.NewReader(tc.data), dir)
			var be *Error
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want a *backup.Error", err)
			}
			if be.Truncated != tc.truncated || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (truncated %v), want %q (truncated %v)", err, be.Truncated, tc.want, tc.truncated)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the folder is left behind: %v", err)
			}
		})
	}
}

func TestExtractRefusesExistingFolder(t *testing.T) {
	if _, err := Extract(bytes.NewReader(sample(t)), t.TempDir()); !errors.Is(err, os.ErrExist) {
		t.Errorf("err = %v, want one that says the folder exists", err)
	}
}

// A backup is outside input to intentd restore: whatever it holds, reading it ends with
// a header or an error, and never writes outside its folder.
func FuzzVisit(f *testing.F) {
	whole := sample(f)
	f.Add(whole)
	f.Add(whole[:len(whole)/3])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Visit(bytes.NewReader(data), func(name string, _ int64, r io.Reader) error {
			if checkName(name) != nil {
				t.Fatalf("a file named %q was given", name)
			}
			_, err := io.Copy(io.Discard, r)
			return err
		})
	})
}
