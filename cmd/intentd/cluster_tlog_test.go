package main_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/proof"
)

// logless is the member of TestCluster's rig that keeps no transparency log.
const logless = 2

// rigArgs are the flags TestCluster adds to its members: the last keeps no log.
func rigArgs(i int) []string {
	if i == logless {
		return []string{"--tlog=false"}
	}
	return nil
}

// checkLogFromKeepers decides an intent through the member that keeps no log: it
// serves the cluster's log all the same, read from a member that keeps one. Its
// checkpoint and tiles are a keeper's, byte for byte, its GET /info names the same log,
// and the proof it serves carries the outcome's inclusion, which verifies offline.
func checkLogFromKeepers(t *testing.T, r *rig) {
	t.Helper()
	keeper, member := r.nodes[0], r.nodes[logless]
	id := r.submitTo(t, member)
	if code, why := proposeVia(member, id); code != http.StatusOK {
		t.Fatalf("proposal through the member without a log: %d %s", code, why)
	}
	waitTerminal(t, member.url, id, "success")

	var info, keeperInfo struct {
		PublicKey      string `json:"public_key"`
		LogOrigin      string `json:"log_origin"`
		LogVerifierKey string `json:"log_verifier_key"`
	}
	getJSON(t, member.url+"/info", &info)
	getJSON(t, keeper.url+"/info", &keeperInfo)
	if info != keeperInfo || info.LogOrigin == "" || info.LogVerifierKey == "" {
		t.Errorf("GET /info of the member without a log: %+v; a keeper's: %+v", info, keeperInfo)
	}
	pub, err := crypto.DecodeBase58(info.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		bundle := getBody(t, member.url+"/intents/"+id+"/proof")
		rep, err := proof.Verify(bundle, pub)
		if err != nil {
			t.Fatalf("the proof served by the member without a log does not verify: %v", err)
		}
		if rep.Log != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the proof served by the member without a log has no inclusion:\n%s", bundle)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The outcomes have stopped: the keepers sign the same checkpoint, and the member
	// serves it.
	var cp []byte
	for {
		a, code := getLog(t, keeper.url+"/log/checkpoint")
		b, codeB := getLog(t, member.url+"/log/checkpoint")
		if code == http.StatusOK && codeB == http.StatusOK && bytes.Equal(a, b) {
			cp = a
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /log/checkpoint: the keeper answers %d\n%s\nthe member without a log %d\n%s", code, a, codeB, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	size := strings.Split(string(cp), "\n")[1]
	for _, path := range []string{"/log/tile/0/000.p/" + size, "/log/tile/entries/000.p/" + size} {
		a, code := getLog(t, keeper.url+path)
		b, codeB := getLog(t, member.url+path)
		if code != http.StatusOK || codeB != http.StatusOK || !bytes.Equal(a, b) {
			t.Errorf("GET %s: the keeper answers %d, the member without a log %d; the same bytes: %v", path, code, codeB, bytes.Equal(a, b))
		}
	}
	if _, code := getLog(t, member.url+"/log/tile/0/999"); code != http.StatusNotFound {
		t.Errorf("GET /log/tile/0/999 of the member without a log: %d, want 404 as a keeper answers", code)
	}

	// Each keeper killed in turn, so that one of the kills is of the member the log's
	// grain is on: the member without a log answers the checkpoint, or 503 and no other
	// error, from the kill on, and the checkpoint within seconds, read from the other
	// keeper. Started again, the keeper reopens its log and is a member again.
	for _, k := range []int{0, 1} {
		killed := r.nodes[k]
		killed.kill()
		start := time.Now()
		for {
			b, code := getLog(t, member.url+"/log/checkpoint")
			if code == http.StatusOK && bytes.Equal(b, cp) {
				t.Logf("with keeper %d killed, the member without a log served the checkpoint %v after the kill", k, time.Since(start).Round(10*time.Millisecond))
				break
			}
			if code != http.StatusServiceUnavailable || time.Since(start) > 30*time.Second {
				t.Fatalf("GET /log/checkpoint of the member without a log, keeper %d killed %v before: %d\n%s", k, time.Since(start).Round(time.Second), code, b)
			}
			time.Sleep(100 * time.Millisecond)
		}
		killed.start()
		waitMembers(t, r.nodes, 3)
	}
}

// getLog reads a resource of the log: its body and status.
func getLog(t *testing.T, url string) ([]byte, int) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return body, resp.StatusCode
}
