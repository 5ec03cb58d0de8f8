package persistence

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd/internal/storeformat"
)

// setFormat makes a store, sets its format record to rec (nil: none, as the versions
// before the record left it), and closes it.
func setFormat(t *testing.T, rec []byte) FS {
	t.Helper()
	fs := NewMemFS()
	s := openMem(t, fs)
	b := s.db.NewBatch()
	if rec == nil {
		b.Delete([]byte(keyFormat), nil)
	} else {
		b.Set([]byte(keyFormat), rec, nil)
	}
	if err := s.commit(b); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return fs
}

// rawFormat reads the format record of the closed store in fs without opening it as a
// store, so that nothing is written: nil when there is none.
func rawFormat(t *testing.T, fs FS) []byte {
	t.Helper()
	db, err := pebble.Open("db", &pebble.Options{FS: fs.fs, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, closer, err := db.Get([]byte(keyFormat))
	if err == pebble.ErrNotFound {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return bytes.Clone(v)
}

// TestFormat opens stores of each format a start meets, and checks what it does: the
// record it leaves, the line it logs, or the error it refuses the store with.
func TestFormat(t *testing.T) {
	current := storeformat.Record{Format: Format}
	tests := []struct {
		name string
		// prepare makes the store, closed; nil: none, a new store.
		prepare func(t *testing.T) FS
		// wantLog is in the lines logged, wantErr in the error of a refused open.
		wantLog, wantErr []string
		// wantRecord is the record left (its writer is not compared).
		wantRecord storeformat.Record
	}{
		{name: "new", wantRecord: current},
		{name: "current", prepare: func(t *testing.T) FS { return setFormat(t, current.Encode()) }, wantRecord: current},
		{
			name:       "format 2 or earlier, without a record",
			prepare:    earlierLayout,
			wantLog:    []string{"store migrated from data format 2 or earlier (no format record) to 3", "policy references moved"},
			wantRecord: current,
		},
		{
			name:       "format 3, without a record",
			prepare:    func(t *testing.T) FS { return setFormat(t, nil) },
			wantLog:    []string{"store migrated from data format 3 (no format record) to 3"},
			wantRecord: current,
		},
		{
			name:       "an older format recorded",
			prepare:    func(t *testing.T) FS { return setFormat(t, storeformat.Record{Format: 2, WrittenBy: "v0.1"}.Encode()) },
			wantLog:    []string{"store migrated from data format 2 to 3"},
			wantRecord: current,
		},
		{
			name: "newer",
			prepare: func(t *testing.T) FS {
				return setFormat(t, storeformat.Record{Format: Format + 1, WrittenBy: "v9.9.9"}.Encode())
			},
			wantErr: []string{"open store in db is of data format 4, recorded by intentd v9.9.9", "reads formats up to 3",
				"run intentd v9.9.9 or later", "restore the backup taken before the upgrade"},
			wantRecord: storeformat.Record{Format: Format + 1, WrittenBy: "v9.9.9"},
		},
		{
			name:       "damaged",
			prepare:    func(t *testing.T) FS { return setFormat(t, []byte("\x03garbage")) },
			wantErr:    []string{"open store in db: its data format record is damaged", "restore the store from a backup"},
			wantRecord: storeformat.Record{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, made := NewMemFS(), tt.prepare != nil
			var before []byte
			if made {
				fs = tt.prepare(t)
				before = rawFormat(t, fs)
			}
			var logged bytes.Buffer
			s, err := Open("db", Options{FS: fs, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			if len(tt.wantErr) > 0 {
				if err == nil {
					s.Close()
					t.Fatal("Open succeeded, want it refused")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if after := rawFormat(t, fs); !bytes.Equal(after, before) {
					t.Errorf("the refused open changed the record from %q to %q", before, after)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.wantLog {
				if !strings.Contains(logged.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, logged.String())
				}
			}
			if len(tt.wantLog) == 0 && strings.Contains(logged.String(), "migrated") {
				t.Errorf("a store of the current format logged a migration:\n%s", logged.String())
			}
			got, err := storeformat.Decode(rawFormat(t, fs))
			if err != nil || got.Format != tt.wantRecord.Format {
				t.Errorf("record after Open = %+v, %v; want format %d", got, err, tt.wantRecord.Format)
			}
		})
	}
}
