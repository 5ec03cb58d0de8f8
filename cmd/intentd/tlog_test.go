package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
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
	"github.com/intentd/intentd/tlog"
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
	t.Parallel()
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

	seen := lr.leafIndexes(t, ids, n)

	for _, id := range []string{ids[0], ids[1], ids[7], ids[300], ids[len(ids)-1]} {
		lr.checkInclusion(t, s, pub, id, seen[id])
	}

	t.Run("cache headers", func(t *testing.T) { testLogCacheHeaders(t, s) })
	t.Run("compressed bundles", func(t *testing.T) { testLogCompression(t, s) })
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
		// The two outcomes after the restart are its first two leaves, in whichever
		// order their proofs ended: each decides on its own.
		at := map[uint64]string{} // leaf index: the intent whose proof carries it
		for _, id := range more {
			r := s.do("GET", "/intents/"+id+"/proof", "", nil)
			for _, leaf := range []uint64{n, n + 1} {
				if strings.Contains(string(r.body), `"leaf_index":`+strconv.FormatUint(leaf, 10)+",") {
					at[leaf] = id
				}
			}
		}
		if len(at) != 2 || at[n] == at[n+1] {
			t.Fatalf("the proofs of the two outcomes after the restart carry leaves %v; want %d and %d, one each", at, n, n+1)
		}
	})
}

// testLogCacheHeaders checks the Cache-Control and Content-Type of the log's
// resources, and of the paths that name none.
func testLogCacheHeaders(t *testing.T, s *testServer) {
	// C2SP tlog-tiles: the checkpoint is text/plain and "mutable, so its headers
	// SHOULD prevent caching beyond a few seconds"; tiles and entry bundles, full
	// and partial, are application/octet-stream and "immutable, so [their] caching
	// headers SHOULD be long-lived".
	const immutable = "public, max-age=31536000, immutable"
	const octets = "application/octet-stream"
	for _, tt := range []struct {
		path, cache, contentType string
		status                   int
		code                     string
	}{
		{"/log/checkpoint", "no-cache", "text/plain; charset=utf-8", 200, ""},
		{"/log/tile/0/000", immutable, octets, 200, ""},
		{"/log/tile/entries/001", immutable, octets, 200, ""},
		{"/log/tile/0/002.p/3", immutable, octets, 200, ""},
		{"/log/tile/entries/002.p/3", immutable, octets, 200, ""},
		{"/log/tile/1/000.p/2", immutable, octets, 200, ""},
		{"/log/tile/0/002", "no-store", "application/json", 404, intentd.CodeLogNotFound},
		{"/log/tile/0/002.p/4", "no-store", "application/json", 404, intentd.CodeLogNotFound},
		{"/log/tile/entries/003", "no-store", "application/json", 404, intentd.CodeLogNotFound},
		{"/log/tile/0/x000/002", "", "application/json", 404, intentd.CodeNotFound},
		{"/log/tile/entries/2", "", "application/json", 404, intentd.CodeNotFound},
	} {
		t.Run(strings.TrimPrefix(tt.path, "/log/"), func(t *testing.T) {
			r := s.do("GET", tt.path, "", nil)
			if r.status != tt.status || r.header.Get("Cache-Control") != tt.cache || r.header.Get("Content-Type") != tt.contentType {
				t.Errorf("GET %s: %d, Cache-Control %q, Content-Type %q; want %d, %q, %q", tt.path, r.status,
					r.header.Get("Cache-Control"), r.header.Get("Content-Type"), tt.status, tt.cache, tt.contentType)
			}
			if tt.code != "" {
				if code, _ := r.errorBody(t); code != tt.code {
					t.Errorf("GET %s: code %q, want %q", tt.path, code, tt.code)
				}
			}
		})
	}
}

// testLogCompression checks that entry bundles, and only they, are gzipped when the
// client accepts it, to the same bytes.
func testLogCompression(t *testing.T, s *testServer) {
	// "Entry bundles SHOULD be compressed at the HTTP layer", by Accept-Encoding.
	for _, tt := range []struct {
		path, accept string
		gzipped      bool
	}{
		{"/log/tile/entries/000", "gzip", true},
		{"/log/tile/entries/002.p/3", "br, gzip;q=0.5", true},
		{"/log/tile/entries/000", "identity", false},
		{"/log/tile/entries/000", "*;q=1, gzip;q=0", false},
		{"/log/tile/0/000", "gzip", false},
	} {
		t.Run(tt.path+" "+tt.accept, func(t *testing.T) {
			plain := s.do("GET", tt.path, "", nil, "Accept-Encoding", "identity")
			r := s.do("GET", tt.path, "", nil, "Accept-Encoding", tt.accept)
			if r.status != 200 || (r.header.Get("Content-Encoding") == "gzip") != tt.gzipped {
				t.Fatalf("GET %s with Accept-Encoding %q: %d, Content-Encoding %q", tt.path, tt.accept, r.status, r.header.Get("Content-Encoding"))
			}
			body := r.body
			if tt.gzipped {
				zr, err := gzip.NewReader(bytes.NewReader(r.body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
				if len(r.body) >= len(plain.body) {
					t.Errorf("gzipped, the bundle is %d bytes, plain %d", len(r.body), len(plain.body))
				}
			}
			if !bytes.Equal(body, plain.body) {
				t.Fatal("the bundle differs from the plain one")
			}
		})
	}
}

// leafIndexes reads the n leaves of the log from its tiles and entry bundles, checks
// that each entry hashes to its tile's leaf hash and that each of ids has a leaf, and
// returns the index of each intent's leaf.
func (lr *logReader) leafIndexes(t *testing.T, ids []string, n uint64) map[string]uint64 {
	t.Helper()
	ctx := context.Background()
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
	return seen
}

// checkInclusion checks the log inclusion in the proof of id: at leaf, and with the
// inclusion proof the reader builds from the tiles, and verifying under pub.
func (lr *logReader) checkInclusion(t *testing.T, s *testServer, pub ed25519.PublicKey, id string, leaf uint64) {
	t.Helper()
	ctx := context.Background()
	r := s.do("GET", "/intents/"+id+"/proof", "", nil)
	var b struct {
		Log *intentd.LogInclusion `json:"log"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil || b.Log == nil {
		t.Fatalf("proof of %s has no log inclusion: %s", id, r)
	}
	if b.Log.LeafIndex != leaf {
		t.Fatalf("proof of %s names leaf %d, the bundles hold it at %d", id, b.Log.LeafIndex, leaf)
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
	if err != nil || rep.Log == nil || rep.Log.LeafIndex != leaf {
		t.Fatalf("proof of %s: %+v, %v", id, rep, err)
	}
}

// TestTransparencyLogSameOnEveryNode runs two intentd with one key on one NATS stream,
// as nodes of one service: each builds its log from the stream, and both sign the same
// checkpoint, byte for byte, over the same tiles.
func TestTransparencyLogSameOnEveryNode(t *testing.T) {
	t.Parallel()
	_, args := sharedNodes(t)
	a, b := startServer(t, args), startServer(t, args)
	const n = 20
	decideThroughBoth(t, a, b, n, n)
	for _, path := range []string{"/log/tile/0/000.p/20", "/log/tile/entries/000.p/20"} {
		ra, rb := a.do("GET", path, "", nil), b.do("GET", path, "", nil)
		if ra.status != http.StatusOK || !bytes.Equal(ra.body, rb.body) {
			t.Fatalf("GET %s: %d and %d, bodies equal %v", path, ra.status, rb.status, bytes.Equal(ra.body, rb.body))
		}
	}
}

// sharedNodes starts a NATS server for nodes of one service and writes the signing key
// they share: the arguments start a node on it.
func sharedNodes(t *testing.T) (*natsstore.Embedded, []string) {
	t.Helper()
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
	return srv, []string{"--store", srv.URL(), "--nats-prefix", "shared", "--signing-key", keyFile}
}

// decideThroughBoth decides k intents, submitted and proposed to through a and b in
// turn, and waits until both sign the same checkpoint, byte for byte, of size leaves.
func decideThroughBoth(t *testing.T, a, b *testServer, k int, size uint64) {
	t.Helper()
	for i := range k {
		node := []*testServer{a, b}[i%2]
		id := node.submit()
		if r := node.propose(id, solutionPasses); r.status != http.StatusOK {
			t.Fatalf("proposal: %s", r)
		}
	}
	_, rawA := a.logReader().waitCheckpoint(t, size)
	_, rawB := b.logReader().waitCheckpoint(t, size)
	if !bytes.Equal(rawA, rawB) {
		t.Fatalf("the nodes sign different checkpoints at %d leaves:\n%s\n%s", size, rawA, rawB)
	}
}

// logSnapshot is what a reader fetches of a log: its checkpoint and the resources the
// checkpoint's tree is served as, for two servers to be compared byte for byte.
func (s *testServer) logSnapshot(n uint64) map[string][]byte {
	s.t.Helper()
	paths := []string{"/log/checkpoint"}
	for b := uint64(0); b*256 < n; b++ {
		w := min(256, n-b*256)
		suffix := ""
		if w < 256 {
			suffix = ".p/" + strconv.FormatUint(w, 10)
		}
		idx := fmt.Sprintf("%03d", b)
		paths = append(paths, "/log/tile/0/"+idx+suffix, "/log/tile/entries/"+idx+suffix)
	}
	if n >= 256 {
		paths = append(paths, "/log/tile/1/000.p/"+strconv.FormatUint(n/256, 10))
	}
	out := map[string][]byte{}
	for _, p := range paths {
		r := s.do("GET", p, "", nil)
		if r.status != http.StatusOK {
			s.t.Fatalf("GET %s: %s", p, r)
		}
		out[p] = r.body
	}
	return out
}

// waitSameLog waits until s serves want, byte for byte.
func (s *testServer) waitSameLog(want map[string][]byte, n uint64) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := s.do("GET", "/log/checkpoint", "", nil)
		if bytes.Equal(r.body, want["/log/checkpoint"]) {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("after 30s the checkpoint is\n%s\nwant\n%s\nlogs:\n%s", r.body, want["/log/checkpoint"], s.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for p, body := range s.logSnapshot(n) {
		if !bytes.Equal(body, want[p]) {
			s.t.Fatalf("GET %s differs from the first server's", p)
		}
	}
}

// TestTransparencyLogRebuildsAfterPruning loses a node's log folder after the events
// were pruned: the node rebuilds, from the entries the store keeps, the tree it served
// before (the same signed checkpoint, tiles and bundles), and goes on with it.
func TestTransparencyLogRebuildsAfterPruning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) []string
	}{
		{"pebble", func(t *testing.T) []string { ownStores(t); return nil }},
		{"nats", func(t *testing.T) []string {
			srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Shutdown)
			return []string{"--store", srv.URL(), "--nats-prefix", "rebuild"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// The newest event only is kept, and a start prunes the rest.
			args := append(tc.store(t), "--event-retention", "1")
			s := startServerIn(t, dir, args)
			const n = 256 + 4
			s.decideMany(n)
			_, raw := s.logReader().waitCheckpoint(t, n)
			want := s.logSnapshot(n)
			if !bytes.Equal(want["/log/checkpoint"], raw) {
				t.Fatal("the checkpoint changed between two reads")
			}
			if err := s.m.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(dir, "tlog")); err != nil {
				t.Fatal(err)
			}

			s = startServerIn(t, dir, args)
			if first, last, err := s.m.store.EventBounds(context.Background()); err != nil || first != last {
				t.Fatalf("after the restart the events retained are %d to %d (%v), want the newest only", first, last, err)
			}
			s.waitSameLog(want, n)
			if !strings.Contains(s.logs.String(), "took leaves from the store") {
				t.Fatalf("the log was not rebuilt from the store:\n%s", s.logs)
			}
			// It goes on: a later checkpoint is consistent with the one before.
			lr := s.logReader()
			cp0, _, _, err := tclient.FetchCheckpoint(context.Background(), func(context.Context) ([]byte, error) { return raw, nil }, lr.verifier, lr.origin)
			if err != nil {
				t.Fatal(err)
			}
			s.decideMany(3)
			cp, _ := lr.waitCheckpoint(t, n+3)
			pb, err := tclient.NewProofBuilder(context.Background(), cp.Size, lr.f.ReadTile)
			if err != nil {
				t.Fatal(err)
			}
			cons, err := pb.ConsistencyProof(context.Background(), cp0.Size, cp.Size)
			if err != nil {
				t.Fatal(err)
			}
			if err := proof.VerifyConsistency(rfc6962.DefaultHasher, cp0.Size, cp.Size, cons, cp0.Hash, cp.Hash); err != nil {
				t.Fatalf("the rebuilt log is not consistent with the one before: %v", err)
			}
		})
	}
}

// TestTransparencyLogNewNodeAfterPruning starts a second node on a NATS store whose
// events were all pruned: it serves the first node's tree, byte for byte, and both go
// on to sign the same checkpoints.
func TestTransparencyLogNewNodeAfterPruning(t *testing.T) {
	t.Parallel()
	srv, args := sharedNodes(t)
	a := startServer(t, args)
	const n = 256 + 7
	a.decideMany(n)
	a.logReader().waitCheckpoint(t, n)

	// Prune every event, once the store holds every entry.
	st, err := natsstore.Open(context.Background(), natsstore.Options{URLs: []string{srv.URL()}, Prefix: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := st.LogBundle(context.Background(), 1)
		if entries, perr := tlog.ParseBundle(b); err == nil && perr == nil && len(entries) == n-256 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store does not hold the log's entries after 20s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := st.PruneEvents(context.Background(), 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	if first, _, err := st.EventBounds(context.Background()); err != nil || first != 0 {
		t.Fatalf("after the prune the first event is %d (%v), want none", first, err)
	}

	b := startServer(t, args)
	b.waitSameLog(a.logSnapshot(n), n)
	if !strings.Contains(b.logs.String(), "took leaves from the store") {
		t.Fatalf("the second node did not build from the store:\n%s", b.logs)
	}
	decideThroughBoth(t, a, b, 4, n+4)
}
