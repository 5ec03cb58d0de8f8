package webhook

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/netguard"
)

// Source is what deliveries read: the event stream, and an intent's policy for an
// endpoint that selects by policy. actors.Engine is one.
type Source interface {
	// Subscribe follows the events after from, as intentd.Engine.Subscribe.
	Subscribe(ctx context.Context, from uint64, f intentd.Filter) (intentd.Subscription, error)
	// GetIntent returns a stored intent, as intentd.Engine.GetIntent.
	GetIntent(ctx context.Context, id string) (json.RawMessage, error)
}

// EventLog reads one event back, for a delivery of one event asked for by an admin.
// intentd.Store is one.
type EventLog interface {
	Events(ctx context.Context, after uint64, limit int, fn func(intentd.Event) error) error
	EventBounds(ctx context.Context) (first, last uint64, err error)
}

// Options configure a Service.
type Options struct {
	Store  intentd.WebhookStore
	Source Source
	Log    EventLog
	// Key signs the v1a signatures of the endpoints that ask for them.
	Key ed25519.PrivateKey
	// Member names this process in the leases: unique among the members sharing the
	// store, new at each start.
	Member string
	// Exclusive says no other process shares the store (Pebble): a lease another
	// start of this node left is taken at once rather than waited out.
	Exclusive bool
	// Schedule is the delay before each attempt of an event (DefaultSchedule).
	Schedule []time.Duration
	// Timeout bounds one attempt, connection to answer (10 s).
	Timeout time.Duration
	// AllowPrivate lets endpoints be on loopback, private and link-local addresses.
	AllowPrivate bool
	// MaxWebhooks bounds the endpoints kept (100).
	MaxWebhooks int
	// LeaseTTL is how long a member's lease on an endpoint lasts unrenewed (15 s):
	// how long an endpoint waits when its member leaves without a word.
	LeaseTTL time.Duration
	// Transport replaces the HTTP transport (tests); the guard of private addresses
	// is then the transport's to keep.
	Transport http.RoundTripper
	Logger    *slog.Logger
}

// Service keeps the endpoints and delivers their events; it implements
// intentd.WebhookManager.
type Service struct {
	opts    Options
	client  *http.Client
	log     *slog.Logger
	metrics *metrics
	wake    chan struct{}

	mu sync.Mutex
	// running are the deliverers of the endpoints this member holds the lease of.
	running map[string]*deliverer
}

var _ intentd.WebhookManager = (*Service)(nil)

// New makes a Service; Run delivers.
func New(o Options) *Service {
	if len(o.Schedule) == 0 {
		o.Schedule = DefaultSchedule
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxWebhooks <= 0 {
		o.MaxWebhooks = 100
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 15 * time.Second
	}
	if o.Member == "" {
		o.Member = uuid.NewString()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	rt := o.Transport
	if rt == nil {
		d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
		if !o.AllowPrivate {
			d.Control = netguard.Control
		}
		rt = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   32,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: o.Timeout,
		}
	}
	return &Service{
		opts: o,
		// A receiver's redirect is not followed: the signature covers one URL's
		// delivery, and a redirect could point past the guard's first check.
		client: &http.Client{Transport: rt, Timeout: o.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		log:     o.Logger,
		metrics: newMetrics(),
		wake:    make(chan struct{}, 1),
		running: map[string]*deliverer{},
	}
}

// PublicKey is the whpk_ key v1a signatures verify with, empty without a key.
func (s *Service) PublicKey() string {
	if s.opts.Key == nil {
		return ""
	}
	return PublicKey(s.opts.Key.Public().(ed25519.PublicKey))
}

// poke asks Run to look at the endpoints now rather than at its next tick.
func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// CreateWebhook checks the spec, makes the endpoint's secret and stores it.
func (s *Service) CreateWebhook(ctx context.Context, spec intentd.WebhookSpec) (intentd.Webhook, error) {
	if err := s.checkSpec(&spec); err != nil {
		return intentd.Webhook{}, err
	}
	n := 0
	if err := s.opts.Store.Webhooks(ctx, func(string, []byte, uint64) error { n++; return nil }); err != nil {
		return intentd.Webhook{}, err
	}
	if n >= s.opts.MaxWebhooks {
		return intentd.Webhook{}, intentd.Errorf(intentd.KindConflict, intentd.CodeWebhookLimit,
			"this server keeps %d webhook endpoints, its most (--webhook-max): delete one first", n)
	}
	secret, err := newSecret()
	if err != nil {
		return intentd.Webhook{}, err
	}
	// Deliveries start after the last event written: an endpoint gets the outcomes
	// from its creation on; POST /webhooks/{id}/redeliver asks for older ones.
	_, last, err := s.opts.Log.EventBounds(ctx)
	if err != nil {
		return intentd.Webhook{}, err
	}
	r := record{Webhook: intentd.Webhook{
		ID: uuid.NewString(), URL: spec.URL, Types: spec.Types, PolicyIDs: spec.PolicyIDs, MandateIDs: spec.MandateIDs,
		Asymmetric: spec.Asymmetric, MaxInFlight: spec.MaxInFlight, CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
		Secret: secret, WebhookState: intentd.WebhookState{Status: intentd.WebhookActive, Delivered: last},
	}}
	if err := s.opts.Store.CreateWebhook(ctx, r.ID, r.encode()); err != nil {
		return intentd.Webhook{}, err
	}
	s.poke()
	w := r.public(time.Now())
	w.Secret = secret
	return w, nil
}

// maxFilter bounds each list of a spec's filters.
const maxFilter = 100

// checkSpec refuses what the service will not deliver to, and fills the defaults.
func (s *Service) checkSpec(spec *intentd.WebhookSpec) error {
	bad := func(format string, args ...any) error {
		return intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidWebhook, format, args...)
	}
	u, err := url.Parse(spec.URL)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "":
		return bad("url: %q is not an absolute http or https URL", spec.URL)
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("url: the scheme %q is not http or https", u.Scheme)
	case u.User != nil:
		return bad("url: credentials in the URL are refused, since every admin reads the URL back; the signature is how a receiver knows the sender")
	case u.Fragment != "":
		return bad("url: a fragment is never sent; remove it")
	case len(spec.URL) > 2048:
		return bad("url: %d bytes, past the 2048 allowed", len(spec.URL))
	}
	if !s.opts.AllowPrivate {
		host := u.Hostname()
		if ip := net.ParseIP(host); ip != nil && !netguard.PublicIP(ip) || host == "localhost" {
			return bad("url: %s is not a public address; a server started with --webhook-allow-private delivers to private networks", host)
		}
	}
	for _, t := range spec.Types {
		if !t.Terminal() {
			return bad("types: %q is not an event type (success, failure, expired)", t)
		}
	}
	for name, list := range map[string][]string{"policy_ids": spec.PolicyIDs, "mandate_ids": spec.MandateIDs} {
		if len(list) > maxFilter {
			return bad("%s: %d ids, past the %d allowed", name, len(list), maxFilter)
		}
		for _, id := range list {
			if id == "" || len(id) > 128 {
				return bad("%s: %q is not an id", name, id)
			}
		}
	}
	if len(spec.Types) > 3 {
		return bad("types: at most the three event types")
	}
	switch {
	case spec.MaxInFlight == 0:
		spec.MaxInFlight = 1
	case spec.MaxInFlight < 1 || spec.MaxInFlight > maxInFlight:
		return bad("max_in_flight: %d, want 1 to %d", spec.MaxInFlight, maxInFlight)
	}
	if spec.Asymmetric && s.opts.Key == nil {
		return bad("asymmetric: this server has no webhook signing key")
	}
	return nil
}

// maxInFlight bounds an endpoint's max_in_flight.
const maxInFlight = 32

// Webhooks lists the endpoints by id, without secrets.
func (s *Service) Webhooks(ctx context.Context) ([]intentd.Webhook, error) {
	out := []intentd.Webhook{}
	now := time.Now()
	err := s.opts.Store.Webhooks(ctx, func(id string, b []byte, _ uint64) error {
		r, err := decodeRecord(id, b)
		if err != nil {
			return err
		}
		out = append(out, s.live(r).public(now))
		return nil
	})
	slices.SortFunc(out, func(a, b intentd.Webhook) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, err
}

// Webhook returns one endpoint, without its secret.
func (s *Service) Webhook(ctx context.Context, id string) (intentd.Webhook, error) {
	r, _, err := s.read(ctx, id)
	if err != nil {
		return intentd.Webhook{}, err
	}
	return s.live(r).public(time.Now()), nil
}

// live is r with the delivery state of this member's deliverer of it, when there is
// one and no admin changed the record since it read it: the position and attempts it
// has not written yet (it writes them every flushEvery).
func (s *Service) live(r record) record {
	s.mu.Lock()
	d := s.running[r.ID]
	s.mu.Unlock()
	if d == nil {
		return r
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rec.Epoch == r.Epoch && d.rec.Delivered >= r.Delivered {
		r.WebhookState = d.rec.WebhookState
		r.Attempts = slices.Clone(d.rec.Attempts)
		if d.rec.Lease != nil {
			r.Lease = d.rec.Lease
		}
	}
	return r
}

func (s *Service) read(ctx context.Context, id string) (record, uint64, error) {
	b, rev, err := s.opts.Store.Webhook(ctx, id)
	if errors.Is(err, intentd.ErrNotFound) {
		return record{}, 0, intentd.Errorf(intentd.KindNotFound, intentd.CodeWebhookNotFound, "no webhook endpoint %s", id)
	}
	if err != nil {
		return record{}, 0, err
	}
	r, err := decodeRecord(id, b)
	return r, rev, err
}

// DeleteWebhook removes an endpoint; its deliverer finds it gone at its next write.
func (s *Service) DeleteWebhook(ctx context.Context, id string) error {
	err := s.opts.Store.DeleteWebhook(ctx, id)
	if errors.Is(err, intentd.ErrNotFound) {
		return intentd.Errorf(intentd.KindNotFound, intentd.CodeWebhookNotFound, "no webhook endpoint %s", id)
	}
	if err == nil {
		s.mu.Lock()
		if d := s.running[id]; d != nil {
			d.cancel()
		}
		s.mu.Unlock()
		s.metrics.forget(id)
	}
	return err
}

// SetWebhookEnabled disables or enables an endpoint.
func (s *Service) SetWebhookEnabled(ctx context.Context, id string, enabled bool) (intentd.Webhook, error) {
	return s.change(ctx, id, func(r *record) error {
		if enabled {
			r.Status, r.DisabledReason = intentd.WebhookActive, ""
		} else {
			r.Status, r.DisabledReason = intentd.WebhookDisabled, "disabled by an admin"
		}
		r.FailingSince, r.Attempt, r.NextAttempt = nil, 0, nil
		return nil
	})
}

// Redeliver moves an endpoint's position back to just before eventID.
func (s *Service) Redeliver(ctx context.Context, id string, eventID uint64) (intentd.Webhook, error) {
	if eventID == 0 {
		return intentd.Webhook{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidWebhook, "from_event_id: event ids start at 1")
	}
	_, last, err := s.opts.Log.EventBounds(ctx)
	if err != nil {
		return intentd.Webhook{}, err
	}
	if eventID > last {
		return intentd.Webhook{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidWebhook,
			"from_event_id: %d is past the last event, %d", eventID, last)
	}
	return s.change(ctx, id, func(r *record) error {
		r.RedeliverEpoch = r.Epoch + 1 // the epoch change gives it
		r.Delivered = eventID - 1
		r.FailingSince, r.Attempt, r.NextAttempt = nil, 0, nil
		if r.Status == intentd.WebhookFailing {
			r.Status = intentd.WebhookActive
		}
		return nil
	})
}

// change applies an admin's change to an endpoint's record, advancing its epoch, and
// reads the record again when another write came first. It starts from the position
// this member's deliverer has reached, when it delivers the endpoint, rather than the
// one it last wrote.
func (s *Service) change(ctx context.Context, id string, fn func(*record) error) (intentd.Webhook, error) {
	for {
		r, rev, err := s.read(ctx, id)
		if err != nil {
			return intentd.Webhook{}, err
		}
		r = s.live(r)
		if err := fn(&r); err != nil {
			return intentd.Webhook{}, err
		}
		r.Epoch++
		_, err = s.opts.Store.UpdateWebhook(ctx, id, r.encode(), rev)
		if errors.Is(err, intentd.ErrStale) {
			continue
		}
		if err != nil {
			return intentd.Webhook{}, err
		}
		s.mu.Lock()
		if d := s.running[id]; d != nil {
			d.notify()
		}
		s.mu.Unlock()
		s.poke()
		return r.public(time.Now()), nil
	}
}

// SendEvent sends one event to an endpoint once, now.
func (s *Service) SendEvent(ctx context.Context, id string, eventID uint64) (intentd.WebhookAttempt, error) {
	r, _, err := s.read(ctx, id)
	if err != nil {
		return intentd.WebhookAttempt{}, err
	}
	var ev *intentd.Event
	if eventID > 0 {
		err = s.opts.Log.Events(ctx, eventID-1, 1, func(e intentd.Event) error {
			if e.ID == eventID {
				ev = &e
			}
			return nil
		})
	}
	if err != nil {
		return intentd.WebhookAttempt{}, err
	}
	if ev == nil {
		return intentd.WebhookAttempt{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidWebhook,
			"event_id: the event log holds no event %d", eventID)
	}
	sg, err := s.signer(r)
	if err != nil {
		return intentd.WebhookAttempt{}, err
	}
	a := s.send(ctx, r.URL, sg, *ev)
	s.metrics.attempt(id, a)
	return a, nil
}

func (s *Service) signer(r record) (signer, error) {
	mac, err := secretKey(r.Secret)
	if err != nil {
		return signer{}, fmt.Errorf("webhook %s: %w", r.ID, err)
	}
	sg := signer{mac: mac}
	if r.Asymmetric {
		sg.priv = s.opts.Key
	}
	return sg, nil
}

// Run delivers the endpoints this member holds the lease of, and takes the lease of
// each endpoint no member holds, until ctx ends.
func (s *Service) Run(ctx context.Context) {
	tick := time.NewTicker(s.opts.LeaseTTL / 5)
	defer tick.Stop()
	for {
		if err := s.scan(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("webhooks: list the endpoints", "err", err)
		}
		select {
		case <-ctx.Done():
			s.mu.Lock()
			ds := make([]*deliverer, 0, len(s.running))
			for _, d := range s.running {
				ds = append(ds, d)
			}
			s.mu.Unlock()
			for _, d := range ds {
				<-d.done
			}
			return
		case <-tick.C:
		case <-s.wake:
		}
	}
}

// scan starts a deliverer for each endpoint that is enabled and whose lease is free
// (or this member's), and counts the endpoints by status.
func (s *Service) scan(ctx context.Context) error {
	now := time.Now()
	counts := map[intentd.WebhookStatus]int{}
	type claim struct {
		r   record
		rev uint64
	}
	var free []claim
	err := s.opts.Store.Webhooks(ctx, func(id string, b []byte, rev uint64) error {
		r, err := decodeRecord(id, b)
		if err != nil {
			s.log.Error("webhooks: a damaged endpoint record is passed over", "webhook", id, "err", err)
			return nil
		}
		counts[r.Status]++
		s.mu.Lock()
		_, running := s.running[id]
		s.mu.Unlock()
		if running || r.Status == intentd.WebhookDisabled || !s.opts.Exclusive && r.heldByOther(s.opts.Member, now) {
			return nil
		}
		free = append(free, claim{r, rev})
		return nil
	})
	s.metrics.setEndpoints(counts)
	if err != nil {
		return err
	}
	for _, c := range free {
		c.r.Lease = &lease{Owner: s.opts.Member, Until: time.Now().Add(s.opts.LeaseTTL)}
		rev, err := s.opts.Store.UpdateWebhook(ctx, c.r.ID, c.r.encode(), c.rev)
		if errors.Is(err, intentd.ErrStale) {
			continue // another member took it, or an admin changed it: the next scan sees
		}
		if err != nil {
			return err
		}
		s.start(ctx, c.r, rev)
	}
	return nil
}
