package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // the profiler's handlers, on http.DefaultServeMux, served only by servePprof
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/policy"
)

// baselineEnv, set in the environment of this program's own executable, makes it serve
// a bare server instead of running a scenario: the intake's bare server, or with the
// value floorServer the floor of intake and decide (floor.go). A bare server runs in a process
// of its own, as intentd does, so that intentd and it share the machine alike.
const baselineEnv = "INTENTBENCH_BASELINE_SERVER"

// floorServer is the value of baselineEnv that asks for the floor.
const floorServer = "decide"

// pprofEnv, when set to a loopback address, makes the bare server and the floor serve
// the Go profiler there, as intentd's --pprof does, so that what bounds the floor can be
// read from its own profile beside intentd's.
const pprofEnv = "INTENTBENCH_PPROF"

// bareEngine is the stateless part of intake and nothing else: the intent's strict
// decoding, its canonical (JCS) form, the attributes checked against the policy, and
// the signature verified. No actor, no store, no fsync. Served through the http
// package's own server, it gives the ceiling that intake is compared with.
type bareEngine struct {
	mu       sync.RWMutex
	policies map[string]*policy.Policy
}

var _ intentd.Engine = (*bareEngine)(nil)

func (e *bareEngine) PutPolicy(_ context.Context, source string) (string, error) {
	p, err := policy.Compile(source)
	if err != nil {
		return "", intentd.Errorf(intentd.KindInvalid, intentd.CodePolicyInvalid, "%v", err)
	}
	e.mu.Lock()
	e.policies[p.ID()] = p
	e.mu.Unlock()
	return p.ID(), nil
}

func (e *bareEngine) Policy(_ context.Context, id string) (*policy.Policy, error) {
	e.mu.RLock()
	p, ok := e.policies[id]
	e.mu.RUnlock()
	if !ok {
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodePolicyNotFound, "policy %s does not exist", id)
	}
	return p, nil
}

func (e *bareEngine) DeletePolicy(context.Context, string) error {
	return errBare
}

// SubmitIntent does what the engine does before it hands an intent to its actor: check
// the attrs and verify the signature over the canonical bytes. The server has decoded
// and canonicalized the intent already, as it does for the engine.
func (e *bareEngine) SubmitIntent(ctx context.Context, sub intentd.Submission) error {
	in := sub.Intent
	p, err := e.Policy(ctx, in.PolicyID)
	if err != nil {
		return intentd.Errorf(intentd.KindInvalid, intentd.CodePolicyNotFound, "intent.policy_id: %v", err)
	}
	attrs := in.Attrs
	if attrs == nil {
		attrs = &policy.Attrs{}
	}
	if err := p.CheckAttrs(*attrs); err != nil {
		return intentd.Errorf(intentd.KindUnprocessable, intentd.CodeAttrsMismatch, "intent.attrs.%v", err)
	}
	if err := crypto.VerifyCanonical(sub.Canonical, sub.Authorship, crypto.VerifyOptions{}); err != nil {
		return intentd.Errorf(intentd.KindInvalid, intentd.CodeAuthorshipInvalid, "%v", err)
	}
	return nil
}

func (e *bareEngine) GetIntent(context.Context, string) (json.RawMessage, error) {
	return nil, errBare
}

func (e *bareEngine) Status(context.Context, string) (intentd.Status, error) {
	return intentd.Status{}, errBare
}

func (e *bareEngine) Propose(context.Context, string, intentd.Proposal, *intentd.AgentSignature) error {
	return errBare
}

func (e *bareEngine) Preview(context.Context, string, intentd.Proposal) (intentd.Preview, error) {
	return intentd.Preview{}, errBare
}

func (e *bareEngine) Subscribe(context.Context, uint64, intentd.Filter) (intentd.Subscription, error) {
	return nil, errBare
}

func (e *bareEngine) Proof(context.Context, string) (*intentd.ProofBundle, error) {
	return nil, errBare
}

var errBare = intentd.Errorf(intentd.KindNotFound, intenthttp.CodeNotFound, "the baseline server stores nothing")

// serveBaseline runs a bare server of the kind baselineEnv names on a free loopback
// port until SIGTERM or SIGINT, printing the banner line the parent waits for. The
// floor keeps its store in a temporary folder, removed when it ends.
func serveBaseline(stderr io.Writer, kind string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var engine intentd.Engine = &bareEngine{policies: map[string]*policy.Policy{}}
	if kind == floorServer {
		dir, err := os.MkdirTemp("", "intentbench-floor-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		floor, err := newFloorEngine(dir)
		if err != nil {
			return err
		}
		defer floor.close()
		engine = floor
	}
	if addr := os.Getenv(pprofEnv); addr != "" {
		if err := servePprof(addr); err != nil {
			return err
		}
	}
	srv := intenthttp.NewServer(engine, intenthttp.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "baseline server listening on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// servePprof serves net/http/pprof on addr for as long as the process lives. The tool
// serves nothing else from http.DefaultServeMux, where the package put its handlers.
func servePprof(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w", pprofEnv, err)
	}
	go http.Serve(ln, http.DefaultServeMux)
	return nil
}
