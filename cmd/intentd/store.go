package main

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/natsstore"
	"github.com/intentd/intentd/persistence"
)

// storeCloser is the store the engine runs on, closed after it.
type storeCloser interface {
	intentd.Store
	Close() error
}

// openStore opens the store the flags name: Pebble in the data folder, NATS servers, or
// a NATS server started here with its JetStream files in the data folder.
func (m *Main) openStore(ctx context.Context) error {
	c := m.Config
	log := m.logger.With("component", "store")
	if c.Store == "pebble" && !c.NatsEmbed {
		s, err := persistence.Open(c.DataDir, persistence.Options{Logger: log, AcceptDataLoss: c.AcceptDataLoss, MinFreeBytes: c.MinFreeDisk})
		if err != nil {
			return err
		}
		m.store, m.pebble, m.digest = s, s, s.Digest
		return nil
	}
	urls := strings.Split(c.Store, ",")
	if c.NatsEmbed {
		srv, err := natsstore.Embed(natsstore.EmbedOptions{
			Dir:        filepath.Join(c.DataDir, "nats"),
			ConfigFile: c.NatsEmbedConfig,
			Logger:     m.logger,
		})
		if err != nil {
			return err
		}
		m.natsSrv = srv
		urls = []string{srv.URL()}
	}
	s, err := natsstore.Open(ctx, natsstore.Options{
		URLs:     urls,
		Creds:    c.NatsCreds,
		Token:    c.NatsToken,
		TLSCA:    c.NatsTLSCA,
		Prefix:   c.NatsPrefix,
		Replicas: c.NatsReplicas,
		Logger:   log,
	})
	if err != nil {
		return err
	}
	m.store, m.digest, m.nats = s, s.Digest, s
	return nil
}
