package natsstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// admin is a connection of another client of the account, the one that breaks things.
func admin(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	return js
}

// wantCode fails unless err is a busy *intentd.Error of code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	var e *intentd.Error
	if !errors.As(err, &e) || e.Kind != intentd.KindBusy || e.Code != code {
		t.Fatalf("%s: %v, want a busy %s error", what, err, code)
	}
}

// TestStreamDeletedUnderStore deletes the stream under an open store: a write fails at
// once with store_missing, reads and Writable too, and the stream is not made again. The
// store opened again refuses to start on the loss, until the record is deleted.
func TestStreamDeletedUnderStore(t *testing.T) {
	ctx := context.Background()
	url := embed(t).URL()
	s := open(t, url)
	defer s.Close()
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIntent(ctx, "a", "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	js := admin(t, url)
	if err := js.DeleteStream(ctx, "INTENTD"); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	err := s.CreateIntent(ctx, "b", "P", []byte("o"), time.Now().Add(time.Hour))
	wantCode(t, "a create after the stream was deleted", err, intentd.CodeStoreMissing)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the create took %v to fail", d)
	}
	_, err = s.Intent(ctx, "a")
	wantCode(t, "a read after the stream was deleted", err, intentd.CodeStoreMissing)
	wantCode(t, "Writable", s.Writable(), intentd.CodeStoreMissing)
	if strings.Contains(err.(*intentd.Error).Message, "INTENTD") {
		t.Errorf("the message shown names the stream: %q", err.(*intentd.Error).Message)
	}
	time.Sleep(checkEvery + time.Second) // a periodic check or two
	wantCode(t, "Writable after a periodic check", s.Writable(), intentd.CodeStoreMissing)
	if _, err := js.Stream(ctx, "INTENTD"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the stream after the loss: %v, want it still missing", err)
	}
	start = time.Now()
	s.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}

	_, err = Open(ctx, Options{URLs: []string{url}})
	if err == nil || !strings.Contains(err.Error(), "stream INTENTD is missing") || !strings.Contains(err.Error(), "nats kv del INTENTD_MARKS stream") {
		t.Fatalf("Open after the loss: %v", err)
	}
	if _, err := js.Stream(ctx, "INTENTD"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the stream after a refused Open: %v, want it still missing", err)
	}
	kv, err := js.KeyValue(ctx, "INTENTD_MARKS")
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, markStream); err != nil {
		t.Fatal(err)
	}
	s = open(t, url)
	defer s.Close()
	if _, err := s.Intent(ctx, "a"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("an intent of the store started over: %v, want none", err)
	}
}

// TestStreamChangedUnderStore changes the stream under an open store: other subjects make
// Writable and the calls fail with store_changed until the layout is put back; a stream
// deleted and made again by someone else, alike but empty, is never taken for the one
// opened, and its records never reach the event sink.
func TestStreamChangedUnderStore(t *testing.T) {
	ctx := context.Background()
	url := embed(t).URL()
	s := open(t, url)
	defer s.Close()
	js := admin(t, url)
	cfg := s.streamConfig(1)
	// wantWritable waits for Writable to fail with code, or to succeed when code is "".
	wantWritable := func(code string) {
		t.Helper()
		deadline := time.Now().Add(3 * checkEvery)
		for {
			err := s.Writable()
			if err == nil && code == "" || err != nil && intentd.ErrorCode(err) == code {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Writable = %v, want code %q", err, code)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	wantWritable("")

	other := cfg
	other.Subjects = append([]string{"other.>"}, cfg.Subjects...)
	if _, err := js.UpdateStream(ctx, other); err != nil {
		t.Fatal(err)
	}
	wantWritable(intentd.CodeStoreChanged)
	_, err := s.PutPolicy(ctx, "P", []byte{1}, nil)
	wantCode(t, "a write to a changed stream", err, intentd.CodeStoreChanged)
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	wantWritable("")

	heard := make(chan intentd.Event, 1)
	s.SetEventSink(func(e intentd.Event) { heard <- e })
	if err := js.DeleteStream(ctx, "INTENTD"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	wantWritable(intentd.CodeStoreMissing)
	if _, err := js.Publish(ctx, "intentd.event", []byte(`{"type":"forged"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-heard:
		t.Fatalf("the sink heard %+v from the stream made again", e)
	case <-time.After(2 * time.Second):
	}

	// Opened again, the store finds a stream where it made one, but not the one it made:
	// it refuses to start over the loss, until the record is deleted.
	s.Close()
	_, err = Open(ctx, Options{URLs: []string{url}})
	if err == nil || !strings.Contains(err.Error(), "was made again") || !strings.Contains(err.Error(), "nats kv del INTENTD_MARKS stream") {
		t.Fatalf("Open on the stream made again: %v", err)
	}
	kv, err := js.KeyValue(ctx, "INTENTD_MARKS")
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, markStream); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, url)
	s2.Close()
}

// TestBucketDeletedUnderStore deletes a bucket opened with Bucket: the store reports it
// missing, and a store opened again refuses to make it again.
func TestBucketDeletedUnderStore(t *testing.T) {
	ctx := context.Background()
	url := embed(t).URL()
	s := open(t, url)
	defer s.Close()
	cfg := jetstream.KeyValueConfig{Bucket: "beside"}
	kv, err := s.Bucket(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := admin(t, url).DeleteKeyValue(ctx, "beside"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * checkEvery)
	for intentd.ErrorCode(s.Writable()) != intentd.CodeStoreMissing {
		if time.Now().After(deadline) {
			t.Fatalf("Writable = %v, want store_missing", s.Writable())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Close()

	s = open(t, url)
	defer s.Close()
	if _, err := s.Bucket(ctx, cfg); err == nil || !strings.Contains(err.Error(), "bucket beside is missing") {
		t.Fatalf("Bucket after the loss: %v", err)
	}
	if _, err := admin(t, url).KeyValue(ctx, "beside"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("the bucket after a refused Bucket: %v, want it still missing", err)
	}
}
