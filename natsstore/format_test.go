package natsstore

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd/internal/storeformat"
	"github.com/intentd/intentd/internal/syncbuf"
)

// marksOf is the bucket of records of the default store on the server at url.
func marksOf(t *testing.T, url string) jetstream.KeyValue {
	t.Helper()
	kv, err := admin(t, url).KeyValue(context.Background(), "INTENTD_MARKS")
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// TestFormat opens stores of each format a start meets, and checks what it does: the
// record it leaves, the line it logs, or the error it refuses the store with.
func TestFormat(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// prepare leaves the store's bucket of records as the case needs, after a first
		// open that wrote a policy; nil: no store before, a new one.
		prepare func(t *testing.T, kv jetstream.KeyValue)
		wantLog string
		wantErr []string
		// wantRecord is the format recorded after the open (0: none to compare, the
		// record left as prepared, compared by its bytes).
		wantRecord int
	}{
		{name: "new", wantRecord: Format},
		{name: "current", prepare: func(*testing.T, jetstream.KeyValue) {}, wantRecord: Format},
		{
			name: "without a record",
			prepare: func(t *testing.T, kv jetstream.KeyValue) {
				if err := kv.Delete(ctx, markFormat); err != nil {
					t.Fatal(err)
				}
			},
			wantLog:    "store migrated from data format 2 or earlier (no format record) to 2",
			wantRecord: Format,
		},
		{
			name: "an older format recorded",
			prepare: func(t *testing.T, kv jetstream.KeyValue) {
				if _, err := kv.Put(ctx, markFormat, storeformat.Record{Format: 1, WrittenBy: "v0.1"}.Encode()); err != nil {
					t.Fatal(err)
				}
			},
			wantLog:    "store migrated from data format 1 to 2",
			wantRecord: Format,
		},
		{
			name: "newer",
			prepare: func(t *testing.T, kv jetstream.KeyValue) {
				if _, err := kv.Put(ctx, markFormat, storeformat.Record{Format: Format + 1, WrittenBy: "v9.9.9"}.Encode()); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: []string{"nats store: stream INTENTD is of data format 3, recorded by intentd v9.9.9", "reads formats up to 2",
				"restore the backup taken before the upgrade"},
		},
		{
			name: "damaged",
			prepare: func(t *testing.T, kv jetstream.KeyValue) {
				if _, err := kv.Put(ctx, markFormat, []byte("garbage")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: []string{"(bucket INTENTD_MARKS, key format): its data format record is damaged", "restore the store from a backup"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := embed(t)
			var before []byte
			if tt.prepare != nil {
				s := open(t, srv.URL())
				if _, err := s.PutPolicy(ctx, "P", []byte("bc"), []byte("src")); err != nil {
					t.Fatal(err)
				}
				s.Close()
				kv := marksOf(t, srv.URL())
				tt.prepare(t, kv)
				if e, err := kv.Get(ctx, markFormat); err == nil {
					before = e.Value()
				}
			}
			var logged syncbuf.Buffer
			s, err := Open(ctx, Options{URLs: []string{srv.URL()}, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
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
				if e, err := marksOf(t, srv.URL()).Get(ctx, markFormat); err != nil || !bytes.Equal(e.Value(), before) {
					t.Errorf("the refused open changed the record from %q: %v", before, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			s.Close()
			if tt.wantLog != "" && !strings.Contains(logged.String(), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, logged.String())
			}
			if tt.wantLog == "" && strings.Contains(logged.String(), "migrated") {
				t.Errorf("a store of the current format logged a migration:\n%s", logged.String())
			}
			e, err := marksOf(t, srv.URL()).Get(ctx, markFormat)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := storeformat.Decode(e.Value()); err != nil || got.Format != tt.wantRecord {
				t.Errorf("record after Open = %+v, %v; want format %d", got, err, tt.wantRecord)
			}
		})
	}
}

// TestFormatRecordOutsideTheStream: recording the format writes nothing to the stream,
// so a node that follows it (of any version) meets no record it does not know, and one
// open while another records the format goes on reading the other's writes.
func TestFormatRecordOutsideTheStream(t *testing.T) {
	ctx := context.Background()
	srv := embed(t)
	a := open(t, srv.URL())
	defer a.Close()
	if err := marksOf(t, srv.URL()).Delete(ctx, markFormat); err != nil {
		t.Fatal(err)
	}
	info, err := a.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := open(t, srv.URL()) // records the format again
	defer b.Close()
	after, err := a.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.State.LastSeq != info.State.LastSeq {
		t.Errorf("the stream went from record %d to %d as the format was recorded", info.State.LastSeq, after.State.LastSeq)
	}
	if _, err := b.PutPolicy(ctx, "P", []byte("bc"), []byte("src")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Policy(ctx, "P"); err != nil {
		t.Errorf("the first node does not read the second's policy after the format was recorded: %v", err)
	}
}
