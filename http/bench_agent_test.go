package http

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/httpsig"
	"github.com/intentd/intentd/internal/benchcpu"
	"github.com/intentd/intentd/persistence"
)

// BenchmarkAgentProposal drives POST /intents/{id}/proposal through the handler over
// an engine on a synced Pebble store, one proposal per open intent: "unsigned" to
// intents of the demo policy, "signed" to intents of examples/delegated.policy, each
// request signed by the delegated agent with a nonce of its own. The signed path adds
// the RFC 9421 verification, the nonce (kept in memory, written with the proposal),
// the delegation check and a version 3 receipt that carries the signature. Requests
// are built and signed before the timer; the timer stops when every proposal's outcome
// has been published, so that cpu-µs/op is all a proposal costs the process, its
// proving included. One caller
// at a time pays a sync of the store's log for each synced write; 32 callers share
// them, as a busy server's proposals do. The target: a signed proposal costs at most
// 80 µs of CPU more than an unsigned one (docs/benchmarks.md, "Signed proposals").
func BenchmarkAgentProposal(b *testing.B) {
	delegated, err := os.ReadFile(filepath.Join("..", "examples", "delegated.policy"))
	if err != nil {
		b.Fatal(err)
	}
	for _, callers := range []int{1, 32} {
		for _, signed := range []bool{false, true} {
			name := fmt.Sprintf("callers=%d/unsigned", callers)
			if signed {
				name = fmt.Sprintf("callers=%d/signed", callers)
			}
			source := evidence.DemoPolicy
			if signed {
				source = string(delegated)
			}
			b.Run(name, func(b *testing.B) { benchProposals(b, callers, signed, source) })
		}
	}
}

// BenchmarkSignedUndelegated is BenchmarkAgentProposal's signed case with the policy
// of its unsigned one: proposals signed as there, to intents of the demo policy, which
// delegates to no agent and so takes a proposal whoever signed it. Set beside the two
// cases of BenchmarkAgentProposal, it parts what a signed proposal costs above an
// unsigned one into the signature's share (this one less "unsigned") and the
// delegating policy's ("signed" less this one): its intents' larger attrs and the
// delegation check (docs/benchmarks.md, "Signed proposals").
func BenchmarkSignedUndelegated(b *testing.B) {
	for _, callers := range []int{1, 32} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			benchProposals(b, callers, true, evidence.DemoPolicy)
		})
	}
}

// benchProposals is one case of BenchmarkAgentProposal: b.N proposals from callers
// concurrent callers to intents of the policy source, signed by an agent or not. The
// intents name the agent in their parameter agents when the policy delegates.
func benchProposals(b *testing.B, callers int, signed bool, source string) {
	e := benchAgentEngine(b, b.N)
	pid, err := e.PutPolicy(context.Background(), source)
	if err != nil {
		b.Fatal(err)
	}
	pub, agentSign := benchAgent(b)
	agents := ""
	if p, err := e.Policy(context.Background(), pid); err != nil {
		b.Fatal(err)
	} else if _, delegates := p.Agents(); delegates {
		agents = fmt.Sprintf(`,"agents":{"Set":{"String":[%q]}}`, crypto.EncodeBase58(pub))
	}
	srv := NewServer(e, Options{})
	var sign func(r *http.Request, body []byte)
	if signed {
		sign = agentSign
	}
	var after uint64
	if *agentWarm > 0 {
		// Every case warms up alike, with unsigned proposals to intents of the demo
		// policy, so that each case's timer starts on a store in the same state; from
		// 32 callers whatever the case's, so that it takes seconds.
		demo, err := e.PutPolicy(context.Background(), evidence.DemoPolicy)
		if err != nil {
			b.Fatal(err)
		}
		after = decideAll(b, e, srv, max(callers, 32), openProposals(b, e, *agentWarm, demo, "", nil), nil, 0)
	}
	driveDecisionsAfter(b, e, srv, callers, openProposals(b, e, b.N, pid, agents, sign), nil, after)
}

// benchAgent is an agent's new key, and a function that signs a request over its body
// with it as an agent does (RFC 9421, a nonce of its own, a window of 4 minutes).
func benchAgent(b *testing.B) (ed25519.PublicKey, func(r *http.Request, body []byte)) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	return pub, func(r *http.Request, body []byte) {
		if err := httpsig.Sign(r, body, priv, httpsig.Params{Created: now, Expires: now.Add(4 * time.Minute), Tag: "agent-payer-auth"}); err != nil {
			b.Fatal(err)
		}
	}
}

// openProposals submits n intents of the policy pid to e, each with agents (a member
// of their attrs, with its leading comma, or "") after the demo policy's parameters,
// and makes a proposal to each: the requests, one a decision. sign, when not nil, signs
// each request over its body.
func openProposals(b *testing.B, e *actors.Engine, n int, pid, agents string, sign func(r *http.Request, body []byte)) [][]*http.Request {
	b.Helper()
	body := []byte(`{"solution":"https://shop.example/products/tshirt-navy-m"}`)
	reqs := make([][]*http.Request, n)
	for i := range reqs {
		id := uuid.NewString()
		raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000}%s}}}`,
			id, pid, agents)
		in, err := intentd.DecodeIntent(raw)
		if err != nil {
			b.Fatal(err)
		}
		sub, err := intentd.NewSubmission(in, raw, crypto.Authorship{})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.SubmitIntent(context.Background(), sub); err != nil {
			b.Fatal(err)
		}
		r := httptest.NewRequest("POST", "/intents/"+id+"/proposal", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if sign != nil {
			sign(r, body)
		}
		reqs[i] = []*http.Request{r}
	}
	return reqs
}

// agentWarm is how many unsigned proposals to intents of the demo policy each case of
// BenchmarkAgentProposal and BenchmarkSignedUndelegated decides before its timer
// starts. A store's first tens of megabytes of writes fill memtables Pebble has just
// mapped (256 KiB, then each twice the last, up to 32 MiB, reused from then on) and the
// Go heap grows to its size, each first touch of a page a fault that costs about 14 µs
// on the machine of docs/benchmarks.md; a server that has run for a while pays none of
// it. 0 measures a fresh store.
var agentWarm = flag.Int("agent.warm", 0, "proposals decided before the timer of each case of BenchmarkAgentProposal, to measure a store past its first writes")

// driveDecisions sends each request of reqs (each element one decision's requests, in
// order) from callers concurrent callers and stops the timer when b.N outcomes have
// been published, each checked by check when it is given; it reports the process's
// CPU and minor page faults per decision. The store holds no outcome yet, so the first
// b.N events of the stream are the decisions'.
func driveDecisions(b *testing.B, e intentd.Engine, srv http.Handler, callers int, reqs [][]*http.Request, check func(intentd.Event) error) {
	driveDecisionsAfter(b, e, srv, callers, reqs, check, 0)
}

// driveDecisionsAfter is driveDecisions on a store whose first `after` events are
// already published (a warm-up's): the b.N after those are the decisions'.
func driveDecisionsAfter(b *testing.B, e intentd.Engine, srv http.Handler, callers int, reqs [][]*http.Request, check func(intentd.Event) error, after uint64) {
	b.ResetTimer()
	cpu, faults := benchcpu.Now(), benchcpu.Faults()
	decideAll(b, e, srv, callers, reqs, check, after)
	if b.Failed() {
		return
	}
	b.StopTimer()
	benchcpu.ReportMicros(b, cpu, "op")
	benchcpu.ReportFaults(b, faults, "op")
}

// decideAll sends every request of reqs from callers concurrent callers and returns
// once an outcome has been published for each, the events after `after`, read as they
// come, as a subscriber would, so that the reader does not fall behind and is not cut
// off; it returns the id of the last.
func decideAll(b *testing.B, e intentd.Engine, srv http.Handler, callers int, reqs [][]*http.Request, check func(intentd.Event) error, after uint64) uint64 {
	sub, err := e.Subscribe(context.Background(), after, intentd.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	decided := make(chan error, 1)
	var last uint64
	go func() {
		for range len(reqs) {
			ev, err := sub.Next(context.Background())
			if err == nil && check != nil {
				err = check(ev)
			}
			if err != nil {
				decided <- err
				return
			}
			last = ev.ID
		}
		decided <- nil
	}()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(reqs)); i = next.Add(1) - 1 {
				for _, r := range reqs[i] {
					rec := httptest.NewRecorder()
					srv.ServeHTTP(rec, r)
					if rec.Code != http.StatusOK {
						b.Errorf("POST %s: %d %s", r.URL.Path, rec.Code, rec.Body)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return 0
	}
	if err := <-decided; err != nil {
		b.Fatal(err)
	}
	return last
}

// benchAgentEngine opens an engine on a synced Pebble store in a temporary folder,
// taking unsigned intents (their authorship is not what is measured) and signing
// receipts, as intentd does. Its proving queue holds all n proposals: when the
// callers outrun the proving, a proposal refused 503 would measure back-pressure, not
// the work of a proposal.
func benchAgentEngine(b *testing.B, n int) *actors.Engine {
	e, _ := benchEngine(b, n, nil)
	return e
}

// benchEngine is benchAgentEngine's engine, with tune applied to its configuration
// when not nil, and the store it is on.
func benchEngine(b *testing.B, n int, tune func(*actors.Config)) (*actors.Engine, *persistence.Store) {
	b.Helper()
	store, err := persistence.Open(b.TempDir(), persistence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		b.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Store, cfg.Extractor, cfg.Prover = store, evidence.DefaultCatalog(), actors.ReceiptProver{Key: key}
	cfg.Verify.AllowUnsigned = true
	cfg.ProvingQueue = max(cfg.ProvingQueue, n)
	if tune != nil {
		tune(&cfg)
	}
	e, err := actors.Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close(); store.Close() })
	<-e.Ready()
	return e, store
}

// BenchmarkAgentProposalInTurn is BenchmarkAgentProposal's two cases in one process, on
// one engine and store, in turn: a block of unsigned proposals, then a block of signed
// ones, and so on, each block's outcomes all published before the next starts, and the
// process's CPU counted to the case of the block it was spent in. Run as two processes,
// the cases differ by what their runs differ by as well (the store's and the heap's
// growth from empty, what the machine does meanwhile): from one caller, runs of the same
// case moved by more than 100 µs a proposal, more than the difference they were to
// measure. Taken in turn, both cases meet the store and the heap as they stand and the
// machine as it is, and the difference is the signed path's. Each case takes b.N
// proposals; the figures are per proposal, and "signed-more-cpu-µs/op" is the target's
// (at most 80 µs; docs/benchmarks.md, "Signed proposals").
func BenchmarkAgentProposalInTurn(b *testing.B) {
	delegated, err := os.ReadFile(filepath.Join("..", "examples", "delegated.policy"))
	if err != nil {
		b.Fatal(err)
	}
	for _, callers := range []int{1, 32} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			benchProposalsInTurn(b, callers, string(delegated))
		})
	}
}

// inTurnBlock is how many proposals of one case a block of BenchmarkAgentProposalInTurn
// holds for each caller: enough that a block's start and end, where callers wait for
// each other, are a small part of it.
const inTurnBlock = 20

// benchProposalsInTurn is one case of BenchmarkAgentProposalInTurn: b.N unsigned
// proposals to intents of the demo policy and b.N signed ones to intents of the
// delegating policy source, from callers concurrent callers, in blocks of each.
func benchProposalsInTurn(b *testing.B, callers int, delegated string) {
	e := benchAgentEngine(b, 2*b.N)
	demo, err := e.PutPolicy(context.Background(), evidence.DemoPolicy)
	if err != nil {
		b.Fatal(err)
	}
	pid, err := e.PutPolicy(context.Background(), delegated)
	if err != nil {
		b.Fatal(err)
	}
	pub, sign := benchAgent(b)
	agents := fmt.Sprintf(`,"agents":{"Set":{"String":[%q]}}`, crypto.EncodeBase58(pub))
	srv := NewServer(e, Options{})
	cases := [2][][]*http.Request{
		openProposals(b, e, b.N, demo, "", nil),
		openProposals(b, e, b.N, pid, agents, sign),
	}
	var cpu [2]time.Duration
	var faults [2]int64
	var after uint64
	block := inTurnBlock * callers
	b.ResetTimer()
	for start := 0; start < b.N; start += block {
		end := min(start+block, b.N)
		for k, reqs := range cases {
			c, f := benchcpu.Now(), benchcpu.Faults()
			after = decideAll(b, e, srv, callers, reqs[start:end], nil, after)
			if b.Failed() {
				return
			}
			cpu[k] += benchcpu.Now() - c
			faults[k] += benchcpu.Faults() - f
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(cpu[0]), "unsigned-cpu-µs/op")
	b.ReportMetric(per(cpu[1]), "signed-cpu-µs/op")
	b.ReportMetric(per(cpu[1]-cpu[0]), "signed-more-cpu-µs/op")
	b.ReportMetric(float64(faults[1]-faults[0])/float64(b.N), "signed-more-faults/op")
}
