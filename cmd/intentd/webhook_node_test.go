package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// standardWebhooksVersion is the version of the npm package standardwebhooks, the
// Standard Webhooks library for JavaScript, whose verifier checks the deliveries.
const standardWebhooksVersion = "1.1.1"

// offlineNPM matches what npm prints when it cannot reach its registry: the install
// cannot happen here, which is no fault of the service's.
var offlineNPM = regexp.MustCompile(`ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network`)

// nodeVerifier is testdata/verify-webhooks.cjs installed beside standardwebhooks.
type nodeVerifier struct {
	t         *testing.T
	node, dir string
}

// installNodeVerifier installs standardwebhooks from the npm registry into a temporary
// folder with the script, or skips the test where it cannot run: without Node.js and
// npm, or without the registry.
func installNodeVerifier(t *testing.T) *nodeVerifier {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short: it installs standardwebhooks from the npm registry")
	}
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("skipped: Node.js and npm are not installed (Debian: apt-get install nodejs npm); the Standard Webhooks verifier needs them")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"webhook-verifier","private":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "standardwebhooks@"+standardWebhooksVersion)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		if offlineNPM.Match(out) {
			t.Skipf("skipped: npm could not reach its registry to install standardwebhooks@%s (offline?): %v\n%s", standardWebhooksVersion, err, out)
		}
		t.Fatalf("npm install standardwebhooks@%s: %v\n%s", standardWebhooksVersion, err, out)
	}
	// Node resolves the script's require from the script's own folder, so it runs from
	// there, not from testdata.
	script, err := os.ReadFile(filepath.Join("testdata", "verify-webhooks.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "verify-webhooks.cjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	return &nodeVerifier{t: t, node: node, dir: dir}
}

// verification is one delivery given to the verifier, with the secret it is checked
// with.
type verification struct {
	name   string
	secret string
	d      delivery
}

// verifierVerdict is what the verifier said of one delivery.
type verifierVerdict struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// verify has Node verify each delivery with new Webhook(secret).verify(body, headers)
// and returns its verdicts, in order.
func (n *nodeVerifier) verify(vs []verification) []verifierVerdict {
	n.t.Helper()
	type input struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	in := make([]input, len(vs))
	for i, v := range vs {
		in[i] = input{Secret: v.secret, Body: base64.StdEncoding.EncodeToString(v.d.body), Headers: map[string]string{
			"webhook-id": v.d.id, "webhook-timestamp": v.d.timestamp, "webhook-signature": v.d.signature,
			"content-type": "application/json",
		}}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		n.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(n.t.Context(), time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, n.node, "verify-webhooks.cjs")
	run.Dir = n.dir
	run.Stdin = bytes.NewReader(stdin)
	var stderr strings.Builder
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		n.t.Fatalf("node verify-webhooks.cjs: %v\n%s", err, stderr.String())
	}
	var verdicts []verifierVerdict
	for line := range strings.Lines(string(out)) {
		var v verifierVerdict
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			n.t.Fatalf("node verify-webhooks.cjs printed %q: %v", line, err)
		}
		verdicts = append(verdicts, v)
	}
	if len(verdicts) != len(vs) {
		n.t.Fatalf("node verify-webhooks.cjs printed %d verdicts for %d deliveries:\n%s", len(verdicts), len(vs), out)
	}
	return verdicts
}

// TestWebhookOfficialVerifier has the Standard Webhooks library for JavaScript (npm
// standardwebhooks), which intentd did not write, verify real deliveries: every event
// of an endpoint with the HMAC signature alone and of one with the Ed25519 signature
// beside it verifies with its endpoint's secret, as it came. The same deliveries
// changed in one part each (the body, the id, the timestamp, the secret) are refused,
// which shows the verifier checks what it is given. On both stores (make test).
func TestWebhookOfficialVerifier(t *testing.T) {
	t.Parallel()
	node := installNodeVerifier(t)
	s := startServer(t, fastRetries)
	plain, asym := newWebhookReceiver(t), newWebhookReceiver(t)
	_, plainSecret := s.createWebhook(fmt.Sprintf(`{"url": %q}`, plain.URL))
	_, asymSecret := s.createWebhook(fmt.Sprintf(`{"url": %q, "asymmetric": true}`, asym.URL))
	const n = 6
	s.decide(n)
	ids := s.eventIDs(n)
	plainTaken := waitTaken(t, plain, n, 20*time.Second)
	asymTaken := waitTaken(t, asym, n, 20*time.Second)
	checkInOrder(t, plainTaken, ids)
	checkInOrder(t, asymTaken, ids)

	var vs []verification
	for _, d := range plainTaken {
		vs = append(vs, verification{"v1 event " + d.id, plainSecret, d})
	}
	for _, d := range asymTaken {
		if !strings.Contains(d.signature, " v1a,") {
			t.Fatalf("delivery %s of the asymmetric endpoint: webhook-signature %q has no v1a signature", d.id, d.signature)
		}
		vs = append(vs, verification{"v1 and v1a event " + d.id, asymSecret, d})
	}
	good := len(vs)
	// Each change below must make the verifier refuse the delivery.
	d := plainTaken[0]
	tampered := d
	tampered.body = bytes.Replace(d.body, []byte(`"type":"`), []byte(`"type": "`), 1)
	if bytes.Equal(tampered.body, d.body) {
		tampered.body = append(bytes.Clone(d.body), ' ')
	}
	otherID := d
	otherID.id = plainTaken[1].id
	earlier := d
	earlier.timestamp = fmt.Sprint(time.Now().Unix() - 60)
	vs = append(vs,
		verification{"the body changed", plainSecret, tampered},
		verification{"another event's id", plainSecret, otherID},
		verification{"another timestamp", plainSecret, earlier},
		verification{"another endpoint's secret", asymSecret, d},
	)

	verdicts := node.verify(vs)
	for i, v := range vs {
		want := i < good
		if verdicts[i].OK != want {
			t.Errorf("%s: the Standard Webhooks verifier says ok=%v (%s), want ok=%v", v.name, verdicts[i].OK, verdicts[i].Error, want)
		}
	}
}
