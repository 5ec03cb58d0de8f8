package mcpserver

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
)

// Backend is what the tools call. Its errors are *intentd.Error values (or convert
// to them through errors.As, as the client's do); any other error is internal.
type Backend interface {
	// Intent returns the stored intent with its authorship.
	Intent(ctx context.Context, id string) (*intentd.AuthoredIntent, error)
	// Policy returns a policy's canonical text.
	Policy(ctx context.Context, id string) (string, error)
	// Status returns an intent's status.
	Status(ctx context.Context, id string) (*client.IntentStatus, error)
	// Requirements returns what the evidence about a solution must satisfy for an
	// intent: its policy partially evaluated on its parameters.
	Requirements(ctx context.Context, id string) (*intentd.Requirements, error)
	// Deadline returns when an open intent expires; false when the backend cannot
	// tell.
	Deadline(ctx context.Context, id string) (time.Time, bool, error)
	// Preview returns what a proposal of solution would decide.
	Preview(ctx context.Context, id, solution string) (*client.Preview, error)
	// Propose makes the intent's one proposal.
	Propose(ctx context.Context, id, solution string) error
	// Await returns the intent's status once it is terminal, or the context's error.
	Await(ctx context.Context, id string) (*client.IntentStatus, error)
	// Proof returns the intent's proof bundle as JSON.
	Proof(ctx context.Context, id string) (json.RawMessage, error)
	// PublicKey returns the key the server signs receipts with.
	PublicKey(ctx context.Context) (ed25519.PublicKey, error)
	// Mandate returns a stored mandate with its authorship: get_mandate reads the
	// mandate's policy and attrs from it, which its status does not carry.
	Mandate(ctx context.Context, id string) (*intentd.AuthoredMandate, error)
	// MandateStatus returns a mandate's state and running totals.
	MandateStatus(ctx context.Context, id string) (*intentd.MandateStatus, error)
	// Purchase creates the intent intentID under the mandate and proposes solution for
	// it, in one step; the same purchase sent again is answered as the first was.
	Purchase(ctx context.Context, mandateID, intentID, solution string) error
}

// deadliner is what an engine offers when it can tell an intent's deadline, which the
// Engine interface and the HTTP API do not carry.
type deadliner interface {
	Deadline(ctx context.Context, id string) (time.Time, error)
}

// local is the Backend of an engine in the same process.
type local struct {
	e   intentd.Engine
	pub ed25519.PublicKey
}

// Local is the Backend of engine e, whose receipts are signed with publicKey (nil
// when it signs none). When e also has a method Deadline(ctx, id) (time.Time, error),
// as actors.Engine does, get_intent reports the deadline.
func Local(e intentd.Engine, publicKey ed25519.PublicKey) Backend {
	return &local{e: e, pub: publicKey}
}

func (l *local) Intent(ctx context.Context, id string) (*intentd.AuthoredIntent, error) {
	raw, err := l.e.GetIntent(ctx, id)
	if err != nil {
		return nil, err
	}
	var ai intentd.AuthoredIntent
	if err := json.Unmarshal(raw, &ai); err != nil {
		return nil, intentd.Internal("read stored intent: %w", err)
	}
	return &ai, nil
}

func (l *local) Policy(ctx context.Context, id string) (string, error) {
	p, err := l.e.Policy(ctx, id)
	if err != nil {
		return "", err
	}
	return p.Pretty(), nil
}

func (l *local) Status(ctx context.Context, id string) (*client.IntentStatus, error) {
	st, err := l.e.Status(ctx, id)
	if err != nil {
		return nil, err
	}
	return reread[client.IntentStatus](st)
}

func (l *local) Requirements(ctx context.Context, id string) (*intentd.Requirements, error) {
	return intentd.IntentRequirements(ctx, l.e, id)
}

func (l *local) Deadline(ctx context.Context, id string) (time.Time, bool, error) {
	d, ok := l.e.(deadliner)
	if !ok {
		return time.Time{}, false, nil
	}
	t, err := d.Deadline(ctx, id)
	return t, err == nil, err
}

func (l *local) Preview(ctx context.Context, id, solution string) (*client.Preview, error) {
	pv, err := l.e.Preview(ctx, id, intentd.Proposal{Solution: solution})
	if err != nil {
		return nil, err
	}
	return reread[client.Preview](pv)
}

func (l *local) Propose(ctx context.Context, id, solution string) error {
	return l.e.Propose(ctx, id, intentd.Proposal{Solution: solution}, nil)
}

// Await subscribes to the intent's events before it reads the status, so that an
// outcome decided in between is not missed, and from SubscribeLive, so that waiting
// costs no replay of the retained events.
func (l *local) Await(ctx context.Context, id string) (*client.IntentStatus, error) {
	canon, ok := intentd.CanonicalIntentID(id)
	if !ok {
		return l.Status(ctx, id) // answers not found
	}
	sub, err := l.e.Subscribe(ctx, intentd.SubscribeLive, intentd.Filter{IntentIDs: []string{canon}})
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	for {
		st, err := l.Status(ctx, canon)
		if err != nil || st.State.Terminal() {
			return st, err
		}
		if _, err := sub.Next(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, intentd.Internal("wait for the outcome: %w", err)
		}
	}
}

// Proof is the engine's bundle, which has no log inclusion: the transparency log is
// the server's, not the engine's, and the server's /mcp adds it (http's mcpBackend).
func (l *local) Proof(ctx context.Context, id string) (json.RawMessage, error) {
	b, err := l.e.Proof(ctx, id)
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

func (l *local) PublicKey(context.Context) (ed25519.PublicKey, error) {
	if l.pub == nil {
		return nil, errors.New("the server signs no receipts")
	}
	return l.pub, nil
}

// mandates is the engine's engine of mandates: an engine that keeps none refuses
// get_mandate and purchase with not_found and says so, as the HTTP routes of mandates
// answer over such an engine.
func (l *local) mandates() (intentd.MandateEngine, error) {
	me, ok := l.e.(intentd.MandateEngine)
	if !ok {
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeNotFound,
			"this server's engine keeps no mandates: get_mandate and purchase have none to act on")
	}
	return me, nil
}

// Mandate decodes the engine's AuthoredMandate, as the client decodes GET
// /mandates/{id}, so that both backends hand the tools one form.
func (l *local) Mandate(ctx context.Context, id string) (*intentd.AuthoredMandate, error) {
	me, err := l.mandates()
	if err != nil {
		return nil, err
	}
	raw, err := me.GetMandate(ctx, id)
	if err != nil {
		return nil, err
	}
	var am intentd.AuthoredMandate
	if err := json.Unmarshal(raw, &am); err != nil {
		return nil, intentd.Internal("read stored mandate: %w", err)
	}
	return &am, nil
}

func (l *local) MandateStatus(ctx context.Context, id string) (*intentd.MandateStatus, error) {
	me, err := l.mandates()
	if err != nil {
		return nil, err
	}
	st, err := me.MandateStatus(ctx, id)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// Purchase passes no agent's signature, as Propose passes none: the engine's tools
// hold no agent's key, so a mandate that delegates to agents refuses the purchase with
// agent_signature_required, which the tool words as guidance.
func (l *local) Purchase(ctx context.Context, mandateID, intentID, solution string) error {
	me, err := l.mandates()
	if err != nil {
		return err
	}
	return me.Purchase(ctx, mandateID, intentd.Purchase{IntentID: intentID, Solution: solution}, nil)
}

// reread converts a value of the engine to the client's form of it through its JSON,
// the one form both agree on.
func reread[T any](v any) (*T, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, intentd.Internal("encode: %w", err)
	}
	var out T
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, intentd.Internal("decode: %w", err)
	}
	return &out, nil
}

// remote is the Backend of a server reached over HTTP.
type remote struct {
	*client.Client
}

// Remote is the Backend of the server c speaks to. The deadline of an intent comes
// from the server's GET /intents/{id}/timeline, as the server's clock has it. The
// mandate's calls are the client's own: Purchase signs its request with c.AgentKey
// when c has one, as Propose does.
func Remote(c *client.Client) Backend {
	return remote{c}
}

// Deadline reads the intent's timeline. A server without one (an older server, whose
// answer is 404 not_found, or an engine that keeps no times) reports no deadline rather
// than failing get_intent, which has everything else an agent needs; an unknown intent
// is intent_not_found, and stays an error.
func (r remote) Deadline(ctx context.Context, id string) (time.Time, bool, error) {
	t, err := r.Timeline(ctx, id)
	if intentd.ErrorCode(err) == intentd.CodeNotFound {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return t.ExpiresAt, !t.ExpiresAt.IsZero(), nil
}

func (r remote) Preview(ctx context.Context, id, solution string) (*client.Preview, error) {
	return r.Client.Preview(ctx, id, solution)
}

// Await follows the event stream, kept to this intent's events, until its one outcome
// comes, then reads its status: the stream replays a retained outcome, so one that came
// before the stream opened is not missed, and a filtered stream sends nothing else.
func (r remote) Await(ctx context.Context, id string) (*client.IntentStatus, error) {
	st, err := r.Status(ctx, id)
	if err != nil || st.State.Terminal() {
		return st, err
	}
	events, err := r.Events(ctx, client.StreamOptions{IntentIDs: []string{id}})
	if err != nil {
		return nil, err
	}
	defer events.Close()
	if _, err := events.Next(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return r.Status(ctx, id)
}

func (r remote) PublicKey(ctx context.Context) (ed25519.PublicKey, error) {
	pub, err := r.Client.PublicKey(ctx)
	if err != nil {
		return nil, err
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("the server's key has %d bytes", len(pub))
	}
	return ed25519.PublicKey(pub), nil
}

// keyOf decodes the Base58 key GET /info reports; nil for none.
func keyOf(b58 string) ed25519.PublicKey {
	if b58 == "" {
		return nil
	}
	pub, err := crypto.DecodeBase58(b58)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil
	}
	return pub
}

// LocalFromInfo is Local with the key of info, as GET /info reports it.
func LocalFromInfo(e intentd.Engine, info intentd.Info) Backend {
	return Local(e, keyOf(info.PublicKey))
}
