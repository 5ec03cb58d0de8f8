package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd/internal/storeformat"
	"github.com/intentd/intentd/persistence"
)

// TestDataFormatNewerRefused: a data folder whose recorded format is newer than this
// build's is refused at start, with the format, the version that recorded it and what to
// do, and left as it was.
func TestDataFormatNewerRefused(t *testing.T) {
	if v := os.Getenv("INTENTD_TEST_STORE"); v != "" && v != "pebble" {
		t.Skip("a Pebble folder; runs when INTENTD_TEST_STORE is pebble")
	}
	data := t.TempDir()
	s, err := persistence.Open(data, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	writeFormatRecord(t, data, storeformat.Record{Format: persistence.Format + 1, WrittenBy: "v99.0.0"})
	err = runRefused(t, []string{"--listen", "127.0.0.1:0", "--data", data})
	if err == nil {
		t.Fatal("intentd started on a folder of a newer format")
	}
	for _, w := range []string{fmt.Sprintf("open store in %s is of data format %d, recorded by intentd v99.0.0", data, persistence.Format+1),
		fmt.Sprintf("reads formats up to %d", persistence.Format), "restore the backup taken before the upgrade", `docs/operating.md, "Upgrading"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the refusal lacks %q: %v", w, err)
		}
	}
}

// writeFormatRecord sets the format record of the closed store in data to rec, as a later
// version would.
func writeFormatRecord(t *testing.T, data string, rec storeformat.Record) {
	t.Helper()
	db, err := pebble.Open(data, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("mformat"), rec.Encode(), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
