package client_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/proof"
)

// examplePolicy is a small policy the embedded demo catalog's t-shirts are checked
// against.
const examplePolicy = `name tshirt
parameters {
  size: string
  max_price_cents: int
}
evidence {
  size: string
  price_cents: int
}
requires {
  evidence.size == parameters.size;
  evidence.price_cents <= parameters.max_price_cents;
}
`

// exampleServer runs the real handler over an in-memory engine that signs receipts
// with a fixed key, and returns its URL and how to stop it.
func exampleServer() (url string, stop func()) {
	store, err := persistence.Open("db", persistence.Options{FS: persistence.NewMemFS()})
	if err != nil {
		log.Fatal(err)
	}
	key, err := crypto.NewSigningKey(make([]byte, 32)) // a fixed key, so that its id prints the same
	if err != nil {
		log.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Store, cfg.Extractor, cfg.Prover = store, evidence.DefaultCatalog(), actors.ReceiptProver{Key: key}
	engine, err := actors.Open(cfg)
	if err != nil {
		log.Fatal(err)
	}
	<-engine.Ready()
	info := intentd.Info{PublicKey: crypto.EncodeBase58(key.PublicKey()), KeyID: key.ID()}
	ts := httptest.NewServer(intenthttp.NewServer(engine, intenthttp.Options{Info: info}))
	return ts.URL, func() { ts.Close(); engine.Close(); store.Close() }
}

// The whole journey: store a policy, sign and submit an intent, propose a solution,
// wait for the outcome on the event stream, and check the proof offline under the key
// the server publishes.
func Example() {
	url, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c, err := client.NewClient(url)
	if err != nil {
		log.Fatal(err)
	}
	policyID, err := c.PutPolicy(ctx, examplePolicy)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("policy:", policyID)

	const intentID = "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31"
	intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":2500}}}}`, intentID, policyID)
	_, author, _ := ed25519.GenerateKey(nil)
	auth, err := crypto.SignEd25519(author, intent)
	if err != nil {
		log.Fatal(err)
	}
	if err := c.SubmitIntent(ctx, intent, auth); err != nil {
		log.Fatal(err)
	}

	// Subscribe before proposing, to this intent only; the stream would replay a
	// missed event anyway.
	events, err := c.Events(ctx, client.StreamOptions{IntentIDs: []string{intentID}})
	if err != nil {
		log.Fatal(err)
	}
	defer events.Close()
	if err := c.Propose(ctx, intentID, "https://shop.example/products/tshirt-navy-m"); err != nil {
		log.Fatal(err)
	}
	ev, err := events.Next()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("event:", ev.ID, ev.Type)

	bundle, err := c.Proof(ctx, intentID)
	if err != nil {
		log.Fatal(err)
	}
	serviceKey, err := c.PublicKey(ctx)
	if err != nil {
		log.Fatal(err)
	}
	report, err := proof.Verify(bundle, serviceKey)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("verified:", report.Outcome, "by", report.Authorship, "under key", report.KeyID)
	// Output:
	// policy: 2W1CeYkx4qJ72uD1ayHWZDVkM2gcRFXdQj7dg3B36GhE
	// event: 1 success
	// verified: success by Ed25519 under key 2KagShR4Usj2uARXJeDw7XJEKvQ3XDr84dC47hUB3Uyd
}

// Error answers come back as *APIError with the server's status, code and message;
// errors.As also finds an *intentd.Error, so that the engine's helpers apply.
func ExampleAPIError() {
	url, stop := exampleServer()
	defer stop()
	c, err := client.NewClient(url)
	if err != nil {
		log.Fatal(err)
	}

	_, err = c.Status(context.Background(), "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31")
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Code)
	}
	fmt.Println(intentd.ErrorKind(err), intentd.ErrorCode(err))

	_, err = c.PutPolicy(context.Background(), "name broken\nrequires { evidence.size == ; }\n")
	fmt.Println(intentd.ErrorKind(err), intentd.ErrorCode(err))
	// Output:
	// 404 intent_not_found
	// not_found intent_not_found
	// invalid policy_invalid
}

// A stream resumes after the last event id it saw: here a second stream starts where
// the first stopped, as Next does by itself when a connection drops.
func ExampleEventStream_Next() {
	url, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.NewClient(url)
	if err != nil {
		log.Fatal(err)
	}
	policyID, err := c.PutPolicy(ctx, examplePolicy)
	if err != nil {
		log.Fatal(err)
	}
	_, author, _ := ed25519.GenerateKey(nil)
	// Two intents for the catalog's navy t-shirt in M: the budget of the second is
	// too small.
	for i, budget := range []int{2500, 100} {
		id := fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i+1)
		intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":%d}}}}`, id, policyID, budget)
		auth, err := crypto.SignEd25519(author, intent)
		if err != nil {
			log.Fatal(err)
		}
		if err := c.SubmitIntent(ctx, intent, auth); err != nil {
			log.Fatal(err)
		}
		if err := c.Propose(ctx, id, "https://shop.example/products/tshirt-navy-m"); err != nil {
			log.Fatal(err)
		}
		// One at a time, so that the event ids follow the intents.
		for st, err := c.Status(ctx, id); err != nil || !st.State.Terminal(); st, err = c.Status(ctx, id) {
			if err != nil {
				log.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	first, err := c.Events(ctx, client.StreamOptions{})
	if err != nil {
		log.Fatal(err)
	}
	ev, err := first.Next()
	if err != nil {
		log.Fatal(err)
	}
	first.Close()
	fmt.Println(ev.ID, ev.Type)

	rest, err := c.Events(ctx, client.StreamOptions{From: first.LastID()})
	if err != nil {
		log.Fatal(err)
	}
	defer rest.Close()
	ev, err = rest.Next()
	if err != nil {
		log.Fatal(err)
	}
	out, err := ev.Outcome()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ev.ID, ev.Type, out.IntentID, out.FailureKind)
	for _, f := range out.Failures {
		fmt.Printf("constraint %d: %s\n", f.Index, f.Reason)
	}
	// Output:
	// 1 success
	// 2 failure 00000000-0000-4000-8000-000000000002 constraints
	// constraint 1: evidence.price_cents = 1999, which is not <= parameters.max_price_cents = 100
}

// delegatedPolicy is examplePolicy with an agents part: its intents name, in their
// agents parameter, the agents that may propose for them, by their Base58 Ed25519
// public keys.
const delegatedPolicy = `name tshirt_by_agent
agents parameters.agents
parameters {
  size: string
  max_price_cents: int
  agents: set<string>
}
evidence {
  size: string
  price_cents: int
}
requires {
  evidence.size == parameters.size;
  evidence.price_cents <= parameters.max_price_cents;
}
`

// An agent proposes for an intent that delegates to it: the client signs the proposal
// with the agent's key (RFC 9421), which the intent lists, and the status names the
// agent. Without the key, the proposal is refused with agent_signature_required and
// the intent stays open.
func ExampleClient_Propose_agent() {
	url, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.NewClient(url)
	if err != nil {
		log.Fatal(err)
	}
	policyID, err := c.PutPolicy(ctx, delegatedPolicy)
	if err != nil {
		log.Fatal(err)
	}

	// The agent's key, made from a fixed seed so that its public key prints the same;
	// an agent makes its own with ed25519.GenerateKey (or intentctl agent keygen).
	agentKey := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	agentPub := crypto.EncodeBase58(agentKey.Public().(ed25519.PublicKey))

	// The person's intent delegates to that agent.
	const intentID = "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31"
	intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":2500},"agents":{"Set":{"String":[%q]}}}}}`,
		intentID, policyID, agentPub)
	_, author, _ := ed25519.GenerateKey(nil)
	auth, err := crypto.SignEd25519(author, intent)
	if err != nil {
		log.Fatal(err)
	}
	if err := c.SubmitIntent(ctx, intent, auth); err != nil {
		log.Fatal(err)
	}

	const solution = "https://shop.example/products/tshirt-navy-m"
	err = c.Propose(ctx, intentID, solution)
	fmt.Println("unsigned:", intentd.ErrorCode(err))

	c.AgentKey, c.AgentTag = agentKey, "agent-payer-auth"
	if err := c.Propose(ctx, intentID, solution); err != nil {
		log.Fatal(err)
	}
	st, err := c.Status(ctx, intentID)
	for ; err == nil && !st.State.Terminal(); st, err = c.Status(ctx, intentID) {
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("signed:", st.State, "by agent", st.Agent.Key, st.Agent.Tag)
	// Output:
	// unsigned: agent_signature_required
	// signed: success by agent 4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS agent-payer-auth
}
