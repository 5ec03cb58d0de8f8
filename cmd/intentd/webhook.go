package main

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/webhook"
)

// webhookKeyLabel names the use of the key v1a webhook signatures are made with, which
// is derived from the receipt key, so that every member of a cluster signs with the
// same key and GET /info shows one.
const webhookKeyLabel = "intentd webhook signatures v1a"

// openWebhooks makes the webhook deliveries of a store that keeps endpoints (both do),
// and registers their metrics; runWebhooks starts them once the engine serves.
func (m *Main) openWebhooks(key *crypto.SigningKey, metrics *intenthttp.Metrics) error {
	ws, ok := m.store.(intentd.WebhookStore)
	if !ok {
		return nil
	}
	c := m.Config.Webhooks
	schedule, err := webhook.ParseSchedule(c.Schedule)
	if err != nil {
		return fmt.Errorf("--webhook-retry-schedule: %w", err)
	}
	priv, err := key.Derive(webhookKeyLabel)
	if err != nil {
		return err
	}
	// The member's name in the leases: its cluster address, for an operator reading
	// GET /webhooks, and a part new at each start, so that a restarted member does
	// not take its old lease for its own.
	member := "local"
	if a := m.Config.Cluster.Advertise; a != "" {
		member = a
	} else if b := m.Config.Cluster.Bind; b != "" {
		member = b
	}
	member += "/" + uuid.NewString()[:8]
	m.webhooks = webhook.New(webhook.Options{
		Store: ws, Source: m.engine, Log: m.store, Key: priv, Member: member,
		Exclusive: m.pebble != nil, Schedule: schedule, Timeout: c.Timeout,
		AllowPrivate: c.AllowPrivate, MaxWebhooks: c.Max,
		Logger: m.logger.With("component", "webhooks"),
	})
	if err := metrics.Registry().Register(m.webhooks.Collector()); err != nil {
		return fmt.Errorf("register the webhook metrics: %w", err)
	}
	return nil
}

// runWebhooks starts the deliveries; stopWebhooks ends them and waits.
func (m *Main) runWebhooks() {
	if m.webhooks == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.webhooks.Run(ctx)
	}()
	m.stopWebhooks = func() {
		cancel()
		<-done
	}
}
