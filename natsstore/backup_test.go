package natsstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

func encodeRecords(t testing.TB, last uint64, recs ...backupRecord) []byte {
	t.Helper()
	var b bytes.Buffer
	e, err := newBackupEncoder(&b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := e.record(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.end(last); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func decodeAll(data []byte) ([]backupRecord, uint64, error) {
	d, err := newBackupDecoder(bytes.NewReader(data))
	if err != nil {
		return nil, 0, err
	}
	var out []backupRecord
	for {
		r, err := d.next()
		if errors.Is(err, io.EOF) {
			return out, d.last, nil
		}
		if err != nil {
			return out, 0, err
		}
		out = append(out, r)
	}
}

var sampleRecords = []backupRecord{
	{seq: 3, subject: "intentd.policy.P", data: []byte("bytecode")},
	{seq: 7, subject: "intentd.intent.a", header: nats.Header{hdrPhase: {"open"}, hdrRollup: {"sub"}}, data: []byte("snapshot")},
	{seq: 8, subject: "intentd.event", data: nil},
}

func TestBackupRecordsRoundTrip(t *testing.T) {
	got, last, err := decodeAll(encodeRecords(t, 9, sampleRecords...))
	if err != nil || last != 9 || len(got) != len(sampleRecords) {
		t.Fatalf("decode = %d records, last %d, %v", len(got), last, err)
	}
	for i, r := range got {
		w := sampleRecords[i]
		if r.seq != w.seq || r.subject != w.subject || !bytes.Equal(r.data, w.data) || len(r.header) != len(w.header) {
			t.Errorf("record %d = %+v, want %+v", i, r, w)
		}
		for k, v := range w.header {
			if r.header.Get(k) != v[0] {
				t.Errorf("record %d header %s = %q, want %q", i, k, r.header.Get(k), v[0])
			}
		}
	}
}

func TestBackupRecordsRefused(t *testing.T) {
	whole := encodeRecords(t, 9, sampleRecords...)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "does not begin as one"},
		{"another file", []byte("SQLite format 3\x00........................"), "does not begin as one"},
		{"cut short", whole[:len(whole)-5], "unexpected EOF"},
		{"no end record", whole[:len(whole)-2], "unexpected EOF"},
		{"bytes after the end", append(bytes.Clone(whole), 0), "bytes follow the end record"},
		{"sequences that fall", encodeRecords(t, 9, sampleRecords[1], sampleRecords[0]), "does not rise"},
		{"a last sequence below the records", encodeRecords(t, 2, sampleRecords...), "below the records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeAll(tc.data)
			if !errors.Is(err, ErrBackupDamaged) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBackupDamaged and %q", err, tc.want)
			}
		})
	}
}

// A backup is outside input to a restore: whatever it holds, decoding ends with the
// records or an error, and never allocates past its bounds.
func FuzzBackupDecoder(f *testing.F) {
	f.Add(encodeRecords(f, 9, sampleRecords...))
	f.Add(encodeRecords(f, 0))
	f.Add([]byte(backupMagic + "\x05\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, _, err := decodeAll(data)
		if err != nil && !errors.Is(err, ErrBackupDamaged) {
			t.Fatalf("an error that is not ErrBackupDamaged: %v", err)
		}
		for i := 1; i < len(recs); i++ {
			if recs[i].seq <= recs[i-1].seq {
				t.Fatalf("sequences %d then %d", recs[i-1].seq, recs[i].seq)
			}
		}
	})
}

// TestBackupRestore backs a store up after writes that leave gaps (snapshots rolled up,
// a policy deleted), restores it on another server, and finds every record at its
// sequence and the store opening on it; a second restore is refused.
func TestBackupRestore(t *testing.T) {
	src := open(t, embed(t).URL())
	defer src.Close()
	ctx := context.Background()
	deadline := time.Now().Add(time.Hour)
	for _, p := range []string{"P", "Q"} {
		if _, err := src.PutPolicy(ctx, p, []byte{1}, []byte("src")); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.DeletePolicy(ctx, "Q"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := src.CreateIntent(ctx, id, "P", []byte("open "+id), deadline); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.BeginProcessing(ctx, "b", "P", []byte("processing b"), deadline); err != nil {
		t.Fatal(err)
	}
	ev, err := intentd.NewEvent(intentd.Status{State: intentd.StateSuccess, IntentID: "c", Proposal: &intentd.Proposal{Solution: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.BeginAndFinish(ctx, src, "c", "P", []byte("done c"), deadline, ev); err != nil {
		t.Fatal(err)
	}
	// A spent nonce is a record with a time to live.
	if err := src.SpendNonce(ctx, "agent", "n1", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := src.Backup(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	info, err := src.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Last != info.State.LastSeq || st.Records != info.State.Msgs {
		t.Fatalf("backup = %+v, the stream has %d records up to %d", st, info.State.Msgs, info.State.LastSeq)
	}

	dst := embed(t)
	rst, err := Restore(ctx, Options{URLs: []string{dst.URL()}}, bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if rst.Last != st.Last || rst.Records != st.Records {
		t.Fatalf("restore = %+v, backup %+v", rst, st)
	}
	nc, err := nats.Connect(dst.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	stream, err := js.Stream(ctx, src.name)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		want, werr := src.stream.GetMsg(ctx, seq)
		got, gerr := stream.GetMsg(ctx, seq)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("sequence %d: source %v, restored %v", seq, werr, gerr)
		}
		if werr == nil && (want.Subject != got.Subject || !bytes.Equal(want.Data, got.Data)) {
			t.Fatalf("sequence %d: restored %s %q, want %s %q", seq, got.Subject, got.Data, want.Subject, want.Data)
		}
	}
	rinfo, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := rinfo.State, info.State; g.FirstSeq != w.FirstSeq || g.LastSeq != w.LastSeq || g.Msgs != w.Msgs {
		t.Fatalf("the restored stream holds %d records from %d to %d, want %d from %d to %d", g.Msgs, g.FirstSeq, g.LastSeq, w.Msgs, w.FirstSeq, w.LastSeq)
	}
	restored := open(t, dst.URL())
	defer restored.Close()
	if b, err := restored.Intent(ctx, "b"); err != nil || string(b) != "processing b" {
		t.Fatalf("intent b = %q, %v", b, err)
	}

	if _, err := Restore(ctx, Options{URLs: []string{dst.URL()}}, bytes.NewReader(buf.Bytes())); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a restore over the stream: %v, want a refusal", err)
	}
}

// TestRestoreCutShort restores a backup that ends early: the stream begun is deleted.
func TestRestoreCutShort(t *testing.T) {
	data := encodeRecords(t, 9, sampleRecords...)
	dst := embed(t)
	ctx := context.Background()
	if _, err := Restore(ctx, Options{URLs: []string{dst.URL()}}, bytes.NewReader(data[:len(data)-4])); !errors.Is(err, ErrBackupDamaged) {
		t.Fatalf("err = %v, want ErrBackupDamaged", err)
	}
	nc, err := nats.Connect(dst.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.Stream(ctx, StreamOf("")); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the stream of a failed restore: %v, want none", err)
	}
}

// TestRestoreRollupsOfOneSubject restores a backup that holds two snapshots of one
// intent, the older read before the newer rolled it up: the server takes a rollup only
// as the first record of its subject in a batch, and the restore applies it again.
func TestRestoreRollupsOfOneSubject(t *testing.T) {
	roll := nats.Header{hdrRollup: {"sub"}}
	data := encodeRecords(t, 4,
		backupRecord{seq: 1, subject: "intentd.intent.x", header: roll, data: []byte("open")},
		backupRecord{seq: 2, subject: "intentd.intent.x", header: roll, data: []byte("processing")},
		backupRecord{seq: 3, subject: "intentd.intent.y", header: roll, data: []byte("open")},
	)
	dst := embed(t)
	ctx := context.Background()
	st, err := Restore(ctx, Options{URLs: []string{dst.URL()}}, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 3 || st.Last != 4 {
		t.Fatalf("restore = %+v, want 3 records up to 4", st)
	}
	s := open(t, dst.URL())
	defer s.Close()
	if b, err := s.Intent(ctx, "x"); err != nil || string(b) != "processing" {
		t.Fatalf("intent x = %q, %v", b, err)
	}
	info, err := s.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 || info.State.LastSeq != 4 {
		t.Fatalf("the stream holds %d records up to %d, want 2 up to 4", info.State.Msgs, info.State.LastSeq)
	}
}
