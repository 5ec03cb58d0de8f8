package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	tclient "github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/natsstore"
	iproof "github.com/intentd/intentd/proof"
)

// decideMany submits n intents and proposes to each, the first of every seven a
// solution the policy refuses, and returns their ids.
func (s *testServer) decideMany(n int) []string {
	s.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = s.submit()
		solution := solutionPasses
		if i%7 == 0 {
			solution = solutionBlackL
		}
		if r := s.propose(ids[i], solution); r.status != http.StatusOK {
			s.t.Fatalf("proposal %d: %s", i, r)
		}
	}
	return ids
}

// logReader is an independent reader of a server's log: tessera's tile client.
type logReader struct {
	f        *tclient.HTTPFetcher
	verifier note.Verifier
	origin   string
}

func (s *testServer) logReader() *logReader {
	s.t.Helper()
	r := s.do("GET", "/info", "", nil)
	var info intentd.Info
	if err := json.Unmarshal(r.body, &info); err != nil || info.LogOrigin == "" {
		s.t.Fatalf("GET /info names no log: %s (%v)", r, err)
	}
	v, err := note.NewVerifier(info.LogVerifierKey)
	if err != nil {
		s.t.Fatalf("log_verifier_key %q: %v", info.LogVerifierKey, err)
	}
	pub, _ := s.serviceKey()
	mine, err := iproof.LogVerifier(info.LogOrigin, pub)
	if err != nil || mine.KeyHash() != v.KeyHash() || mine.Name() != v.Name() {
		s.t.Fatalf("log_verifier_key %q is not the receipt key under the origin's name (%v)", info.LogVerifierKey, err)
	}
	u, _ := url.Parse(s.url + "/log/")
	f, err := tclient.NewHTTPFetcher(u, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return &logReader{f: f, verifier: v, origin: info.LogOrigin}
}

// waitCheckpoint polls the checkpoint until it covers n leaves.
func (lr *logReader) waitCheckpoint(t *testing.T, n uint64) (*log.Checkpoint, []byte) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		cp, raw, _, err := tclient.FetchCheckpoint(context.Background(), lr.f.ReadCheckpoint, lr.verifier, lr.origin)
		if err != nil {
			t.Fatalf("the checkpoint does not verify: %v", err)
		}
		if cp.Size >= n {
			if cp.Size > n {
				t.Fatalf("the checkpoint has %d leaves, more than the %d outcomes", cp.Size, n)
			}
			return cp, raw
		}
		if time.Now().After(deadline) {
			t.Fatalf("the checkpoint has %d leaves after 20s, want %d", cp.Size, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTransparencyLog reads the log of a real server with tessera's tile client, as
// any tlog-tiles reader would: its checkpoints verify under the receipt key, a later
// one is consistent with an earlier one, every proof bundle's inclusion matches the
// one the reader builds from the tiles, the bundles hold the leaves the tiles hash,
// and the whole survives a restart.
func TestTransparencyLog(t *testing.T) {
	dir := t.TempDir()
	s := startServerIn(t, dir, nil)
	lr := s.logReader()
	ctx := context.Background()
	pub, _ := s.serviceKey()

	first := s.decideMany(5)
	cp1, _ := lr.waitCheckpoint(t, 5)
	ids := append(first, s.decideMany(2*256+3-5)...)
	n := uint64(len(ids))
	cp, raw := lr.waitCheckpoint(t, n)

	pb, err := tclient.NewProofBuilder(ctx, cp.Size, lr.f.ReadTile)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := pb.ConsistencyProof(ctx, cp1.Size, cp.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, cp1.Size, cp.Size, cons, cp1.Hash, cp.Hash); err != nil {
		t.Fatalf("checkpoint %d is not consistent with %d: %v", cp.Size, cp1.Size, err)
	}

	hashes, err := tclient.FetchLeafHashes(ctx, lr.f.ReadTile, 0, n, n)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]uint64{}
	for b := uint64(0); b*256 < n; b++ {
		bundle, err := tclient.GetEntryBundle(ctx, lr.f.ReadEntryBundle, b, n)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range bundle.Entries {
			index := b*256 + uint64(i)
			if !bytes.Equal(iproof.LeafHash(e), hashes[index]) {
				t.Fatalf("entry %d does not hash to the tile's leaf hash", index)
			}
			entry, err := intentd.ParseLogEntry(e)
			if err != nil {
				t.Fatalf("entry %d: %v", index, err)
			}
			seen[entry.IntentID] = index
		}
	}
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			t.Fatalf("intent %s has no leaf", id)
		}
	}

	for _, id := range []string{ids[0], ids[1], ids[7], ids[300], ids[len(ids)-1]} {
		r := s.do("GET", "/intents/"+id+"/proof", "", nil)
		var b struct {
			Log *intentd.LogInclusion `json:"log"`
		}
		if err := json.Unmarshal(r.body, &b); err != nil || b.Log == nil {
			t.Fatalf("proof of %s has no log inclusion: %s", id, r)
		}
		if b.Log.LeafIndex != seen[id] {
			t.Fatalf("proof of %s names leaf %d, the bundles hold it at %d", id, b.Log.LeafIndex, seen[id])
		}
		bcp, _, _, err := tclient.FetchCheckpoint(ctx, func(context.Context) ([]byte, error) { return []byte(b.Log.Checkpoint), nil }, lr.verifier, lr.origin)
		if err != nil {
			t.Fatalf("the checkpoint in the proof of %s: %v", id, err)
		}
		bpb, err := tclient.NewProofBuilder(ctx, bcp.Size, lr.f.ReadTile)
		if err != nil {
			t.Fatal(err)
		}
		want, err := bpb.InclusionProof(ctx, b.Log.LeafIndex)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(want, b.Log.InclusionProof, bytes.Equal) {
			t.Fatalf("the inclusion proof of %s differs from the one built from the tiles", id)
		}
		rep, err := iproof.Verify(r.body, pub)
		if err != nil || rep.Log == nil || rep.Log.LeafIndex != seen[id] {
			t.Fatalf("proof of %s: %+v, %v", id, rep, err)
		}
	}

	t.Run("cache headers", func(t *testing.T) {
		for _, tt := range []struct {
			path, cache string
			status      int
			code        string
		}{
			{"/log/checkpoint", "no-cache", 200, ""},
			{"/log/tile/0/000", "public, max-age=31536000, immutable", 200, ""},
			{"/log/tile/entries/001", "public, max-age=31536000, immutable", 200, ""},
			{"/log/tile/0/002.p/3", "public, max-age=60", 200, ""},
			{"/log/tile/1/000.p/2", "public, max-age=60", 200, ""},
			{"/log/tile/0/002", "", 404, intentd.CodeLogNotFound},
			{"/log/tile/0/002.p/4", "", 404, intentd.CodeLogNotFound},
			{"/log/tile/0/x000/002", "", 404, intentd.CodeNotFound},
			{"/log/tile/entries/2", "", 404, intentd.CodeNotFound},
		} {
			r := s.do("GET", tt.path, "", nil)
			if r.status != tt.status || r.header.Get("Cache-Control") != tt.cache && tt.status == 200 {
				t.Errorf("GET %s: %d, Cache-Control %q; want %d, %q", tt.path, r.status, r.header.Get("Cache-Control"), tt.status, tt.cache)
			}
			if tt.code != "" {
				if code, _ := r.errorBody(t); code != tt.code {
					t.Errorf("GET %s: code %q, want %q", tt.path, code, tt.code)
				}
			}
		}
	})

	t.Run("restart", func(t *testing.T) {
		if err := s.m.Close(); err != nil {
			t.Fatal(err)
		}
		s = startServerIn(t, dir, nil)
		lr := s.logReader()
		got := s.do("GET", "/log/checkpoint", "", nil)
		if !bytes.Equal(got.body, raw) {
			t.Fatalf("after a restart the checkpoint is\n%s\nwant\n%s", got.body, raw)
		}
		more := s.decideMany(2)
		cp3, _ := lr.waitCheckpoint(t, n+2)
		pb, err := tclient.NewProofBuilder(ctx, cp3.Size, lr.f.ReadTile)
		if err != nil {
			t.Fatal(err)
		}
		cons, err := pb.ConsistencyProof(ctx, cp.Size, cp3.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, cp.Size, cp3.Size, cons, cp.Hash, cp3.Hash); err != nil {
			t.Fatalf("after a restart the log is not consistent with before: %v", err)
		}
		r := s.do("GET", "/intents/"+more[1]+"/proof", "", nil)
		if !strings.Contains(string(r.body), `"leaf_index":`+strconv.FormatUint(n+1, 10)) {
			t.Fatalf("the proof of the last outcome: %s", r)
		}
	})
}

// TestTransparencyLogSameOnEveryNode runs two intentd with one key on one NATS stream,
// as nodes of one service: each builds its log from the stream, and both sign the same
// checkpoint, byte for byte, over the same tiles.
func TestTransparencyLogSameOnEveryNode(t *testing.T) {
	ownStores(t)
	srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	if err := crypto.WriteSigningKeyFile(keyFile, key); err != nil {
		t.Fatal(err)
	}
	args := []string{"--store", srv.URL(), "--nats-prefix", "shared", "--signing-key", keyFile}
	a, b := startServer(t, args), startServer(t, args)
	const n = 20
	for i := range n {
		node := []*testServer{a, b}[i%2]
		id := node.submit()
		if r := node.propose(id, solutionPasses); r.status != http.StatusOK {
			t.Fatalf("proposal: %s", r)
		}
	}
	_, rawA := a.logReader().waitCheckpoint(t, n)
	_, rawB := b.logReader().waitCheckpoint(t, n)
	if !bytes.Equal(rawA, rawB) {
		t.Fatalf("the nodes sign different checkpoints:\n%s\n%s", rawA, rawB)
	}
	for _, path := range []string{"/log/tile/0/000.p/20", "/log/tile/entries/000.p/20"} {
		ra, rb := a.do("GET", path, "", nil), b.do("GET", path, "", nil)
		if ra.status != http.StatusOK || !bytes.Equal(ra.body, rb.body) {
			t.Fatalf("GET %s: %d and %d, bodies equal %v", path, ra.status, rb.status, bytes.Equal(ra.body, rb.body))
		}
	}
}
