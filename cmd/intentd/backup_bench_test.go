package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd/internal/backup"
	"github.com/intentd/intentd/natsstore"
	"github.com/intentd/intentd/persistence"
)

// benchBackupBytes is how much the stores of the backup benchmarks hold: intent
// snapshots of random bytes (the store's own compression leaves them as random), so
// that gzip gains nothing, as on a real store.
const (
	benchBackupBytes = 256 << 20
	benchSnapshot    = 16 << 10
)

// fillStore writes benchBackupBytes of intents to s through its writers at once.
func fillStore(b *testing.B, create func(id string, snap []byte) error) {
	b.Helper()
	var wg sync.WaitGroup
	n := benchBackupBytes / benchSnapshot
	ids := make(chan int, n)
	for i := range n {
		ids <- i
	}
	close(ids)
	for range 16 {
		wg.Go(func() {
			snap := make([]byte, benchSnapshot)
			for range ids {
				rand.Read(snap)
				if err := create(uuid.NewString(), snap); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkBackupPebble measures a backup of a Pebble store of 256 MiB as the server
// takes it (checkpoint, tar, gzip) and its restore (unpack, check, open); the MB/s are
// of the store's size.
func BenchmarkBackupPebble(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "data")
	s, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	s.PutPolicy(ctx, "P", []byte{1}, nil)
	deadline := time.Now().Add(time.Hour)
	fillStore(b, func(id string, snap []byte) error { return s.CreateIntent(ctx, id, "P", snap, deadline) })
	file := filepath.Join(b.TempDir(), "b.tar.gz")
	b.Run("backup", func(b *testing.B) {
		b.SetBytes(benchBackupBytes)
		for b.Loop() {
			cp, err := s.Checkpoint()
			if err != nil {
				b.Fatal(err)
			}
			f, err := os.Create(file)
			if err != nil {
				b.Fatal(err)
			}
			pb := &pebbleBackup{dir: cp, at: time.Now()}
			if _, err := pb.WriteTo(f); err != nil {
				b.Fatal(err)
			}
			f.Close()
			pb.Close()
		}
	})
	b.Run("restore", func(b *testing.B) {
		b.SetBytes(benchBackupBytes)
		for i := 0; b.Loop(); i++ {
			f, err := os.Open(file)
			if err != nil {
				b.Fatal(err)
			}
			to := filepath.Join(b.TempDir(), fmt.Sprint(i))
			if _, err := backup.Extract(f, to); err != nil {
				b.Fatal(err)
			}
			f.Close()
			r, err := persistence.Open(to, persistence.Options{})
			if err != nil {
				b.Fatal(err)
			}
			r.Close()
			os.RemoveAll(to)
		}
	})
}

// BenchmarkBackupNATS measures a backup of a NATS store of 256 MiB on an embedded
// server (the stream read in order, tar, gzip) and its restore into another.
func BenchmarkBackupNATS(b *testing.B) {
	srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	ctx := context.Background()
	s, err := natsstore.Open(ctx, natsstore.Options{URLs: []string{srv.URL()}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.PutPolicy(ctx, "P", []byte{1}, nil)
	deadline := time.Now().Add(time.Hour)
	fillStore(b, func(id string, snap []byte) error { return s.CreateIntent(ctx, id, "P", snap, deadline) })
	var records bytes.Buffer
	b.Run("backup", func(b *testing.B) {
		b.SetBytes(benchBackupBytes)
		for b.Loop() {
			nb := &natsBackup{ctx: ctx, store: s, at: time.Now()}
			if _, err := nb.WriteTo(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
		records.Reset()
		if _, err := s.Backup(ctx, &records); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("restore", func(b *testing.B) {
		b.SetBytes(benchBackupBytes)
		for b.Loop() {
			b.StopTimer()
			dst, err := natsstore.Embed(natsstore.EmbedOptions{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := natsstore.Restore(ctx, natsstore.Options{URLs: []string{dst.URL()}}, bytes.NewReader(records.Bytes())); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			dst.Shutdown()
			b.StartTimer()
		}
	})
}
