package secretfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestRead checks what a secret file may hold and which modes are refused.
func TestRead(t *testing.T) {
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
		wantErr string
	}{
		{"one line", "s3cret\n", 0o600, "s3cret", ""},
		{"no newline", "s3cret", 0o600, "s3cret", ""},
		{"a CRLF", "s3cret\r\n", 0o600, "s3cret", ""},
		{"read-only", "s3cret\n", 0o400, "s3cret", ""},
		{"spaces kept", " s3 cret \n", 0o600, " s3 cret ", ""},
		{"empty", "", 0o600, "", "empty"},
		{"a newline only", "\n", 0o600, "", "empty"},
		{"two lines", "s3cret\nother\n", 0o600, "", "more than one line"},
		{"a blank line after", "s3cret\n\n", 0o600, "", "more than one line"},
		{"too large", strings.Repeat("x", MaxBytes+1), 0o600, "", "larger than"},
		{"readable by others", "s3cret\n", 0o644, "", "mode 0644 lets group or others access the secret; run chmod 600"},
		{"readable by the group", "s3cret\n", 0o640, "", "mode 0640"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if runtime.GOOS == "windows" && tt.mode&0o077 != 0 {
				t.Skip("no mode bits on Windows")
			}
			path := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(path, []byte(tt.content), tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil { // past the umask
				t.Fatal(err)
			}
			got, err := Read(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("Read = %q, %v; want an error naming %s and saying %q", got, err, path, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Read = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "none")
		if _, err := Read(path); err == nil || !os.IsNotExist(err) || !strings.Contains(err.Error(), path) {
			t.Fatalf("Read of a missing file: %v, want a not-exist error naming it", err)
		}
	})
	t.Run("a folder", func(t *testing.T) {
		if _, err := Read(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Read of a folder: %v", err)
		}
	})
	t.Run("a pipe, as process substitution gives", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("reads the pipe through /proc/self/fd")
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		fmt.Fprintln(w, "s3cret")
		w.Close()
		if got, err := Read(fmt.Sprintf("/proc/self/fd/%d", r.Fd())); err != nil || got != "s3cret" {
			t.Fatalf("Read of a pipe = %q, %v", got, err)
		}
	})
}

// TestResolve checks the forms of a flag pair: a value, @FILE, --NAME-file, both.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none")
	tests := []struct {
		name, value, file string
		want, wantErr     string
	}{
		{"neither", "", "", "", ""},
		{"a value", "s3cret", "", "s3cret", ""},
		{"a file", "", file, "from-file", ""},
		{"@FILE", "@" + file, "", "from-file", ""},
		{"both", "s3cret", file, "", "--token and --token-file: give one of them"},
		{"a missing file", "", missing, "", "--token-file: open " + missing + ": no such file"},
		{"a missing @FILE", "@" + missing, "", "", "--token @FILE: open " + missing + ": no such file"},
		{"@ alone", "@", "", "", "--token @: want a file name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve("token", tt.value, tt.file)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve = %q, %v; want an error saying %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Resolve = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// refuses what is too open, too large or not a file.
func TestWriteNewThenReadKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	if err := WriteNew(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteNew(path, []byte("two")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second WriteNew: %v, want fs.ErrExist", err)
	}
	if got, err := ReadKey(path, 3); err != nil || string(got) != "one" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if _, err := ReadKey(filepath.Join(dir, "missing"), 3); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v, want fs.ErrNotExist", err)
	}
	for _, tc := range []struct {
		name  string
		setup func() string
		limit int
		want  string
	}{
		{"too large", func() string { return path }, 2, "larger than 2 bytes"},
		{"a folder", func() string { return dir }, 3, "not a regular file"},
		{"readable by group", func() string { os.Chmod(path, 0o640); return path }, 3, "mode 0640"},
	} {
		if _, err := ReadKey(tc.setup(), tc.limit); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
