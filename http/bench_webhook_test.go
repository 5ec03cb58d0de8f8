package http

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/webhook"
)

// BenchmarkDecideBesideWebhook decides proposals, as BenchmarkAgentProposal's unsigned
// case does, with no webhook endpoint and with one that is dead: it accepts
// connections and never answers, so that its one delivery under way waits for the
// attempt's time-out while outcomes keep coming. The decide path never waits for a
// delivery, so the two cost the same (docs/benchmarks.md, "Webhooks").
func BenchmarkDecideBesideWebhook(b *testing.B) {
	for _, callers := range []int{1, 32} {
		for _, endpoint := range []string{"none", "dead"} {
			b.Run(fmt.Sprintf("callers=%d/endpoint=%s", callers, endpoint), func(b *testing.B) {
				benchDecideBesideWebhook(b, callers, endpoint == "dead")
			})
		}
	}
}

func benchDecideBesideWebhook(b *testing.B, callers int, dead bool) {
	e, store := benchEngine(b, b.N, nil)
	if dead {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				b.Cleanup(func() { c.Close() }) // held open, never answered
			}
		}()
		ws := webhook.New(webhook.Options{Store: store, Source: e, Log: store, AllowPrivate: true, Timeout: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); ws.Run(ctx) }()
		b.Cleanup(func() { cancel(); <-done })
		if _, err := ws.CreateWebhook(ctx, intentd.WebhookSpec{URL: "http://" + ln.Addr().String() + "/hooks"}); err != nil {
			b.Fatal(err)
		}
	}
	pid, err := e.PutPolicy(context.Background(), evidence.DemoPolicy)
	if err != nil {
		b.Fatal(err)
	}
	srv := NewServer(e, Options{})
	reqs := make([][]*http.Request, b.N)
	for i := range reqs {
		id := uuid.NewString()
		intent := fmt.Sprintf(`{"intent":{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000}}}},"authorship":"Unsigned"}`, id, pid)
		reqs[i] = []*http.Request{jsonRequest("/intents", intent), jsonRequest("/intents/"+id+"/proposal", `{"solution":"https://shop.example/products/tshirt-navy-m"}`)}
	}
	driveDecisions(b, e, srv, callers, reqs, nil)
}
