package main

import (
	"context"
	"fmt"

	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
)

// openEngine starts the engine on the open store, with the limits the flags set, and
// waits for its start-up recovery.
func (m *Main) openEngine(ctx context.Context, key *crypto.SigningKey, extractor evidence.Extractor, metrics *intenthttp.Metrics) error {
	c := m.Config
	ecfg := c.Engine
	ecfg.Store, ecfg.Extractor = m.store, extractor
	ecfg.Prover = actors.ReceiptProver{Key: key}
	ecfg.Verify = c.Verify
	// The engine holds the solution limit too, so that /mcp, which reaches it without
	// the HTTP layer's checks of a body, refuses what POST .../proposal refuses.
	ecfg.MaxSolutionBytes = c.API.Limits.MaxSolutionBytes
	if c.Tlog.Enabled {
		// The log follows the events as a subscriber of its own; the streams' clients
		// keep every place --max-subscribers gives them.
		ecfg.OwnSubscribers = 1
	}
	ecfg.Logger = m.logger.With("component", "engine")
	ecfg.Observer = metrics.Observer()
	ecfg.TracerProvider, _ = m.tracing()
	if c.Cluster.Bind != "" {
		cc, err := m.clusterConfig()
		if err != nil {
			return err
		}
		ecfg.Cluster = cc
	}
	if m.tuneEngine != nil {
		m.tuneEngine(&ecfg)
	}
	var err error
	m.engine, err = actors.Open(ecfg)
	if err != nil {
		return fmt.Errorf("start the engine: %w", err)
	}
	select {
	case <-m.engine.Ready():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
