package main

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentd/intentd/crypto"
)

// TestPortTakenLeavesNothing starts on a port in use: the start fails naming the
// address, and the data folder is not made, nor a signing key in it.
func TestPortTakenLeavesNothing(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	data := filepath.Join(t.TempDir(), "data")
	err = runRefused(t, []string{"--data", data, "--listen", taken.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "--listen") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("a start on a port in use: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, crypto.SigningKeyFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the failed start made a signing key: %v", err)
	}
}
