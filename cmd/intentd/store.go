package main

import (
	"context"
	"errors"
	"fmt"
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
	if c.Store == "pebble" && !c.Nats.Embed {
		opts := c.Pebble
		opts.Logger = log
		s, err := persistence.Open(c.DataDir, opts)
		if err != nil {
			return err
		}
		m.store, m.pebble, m.digest = s, s, s.Digest
		return nil
	}
	opts := c.Nats.Options
	opts.URLs, opts.Logger = strings.Split(c.Store, ","), log
	if c.Nats.Embed {
		srv, err := m.embedNATS()
		if err != nil {
			return err
		}
		m.natsSrv = srv
		opts.URLs, opts.OnlyURLs = []string{srv.URL()}, true
		if srv.NKeyFile() != "" {
			opts.NKey = srv.NKeyFile()
		}
		// The connection stays on this server and learns of no other, and the routes of
		// a configuration do not say how many servers the cluster has (a seed lists
		// one, a listen on 0.0.0.0 matches no route): a cluster's replicas are given.
		if opts.Replicas == 0 && srv.Servers() > 1 {
			return fmt.Errorf("--nats-embed-config joins the embedded server to a NATS cluster: give --nats-replicas (3 for a cluster of three servers or more, 1 to keep one copy), since its routes do not say how many servers the cluster has")
		}
	}
	s, err := natsstore.Open(ctx, opts)
	if err != nil {
		return err
	}
	m.store, m.digest, m.nats = s, s.Digest, s
	return nil
}

// embedNATS starts the NATS server of --nats-embed. It admits one client, intentd, with
// the NKey whose seed is kept in the data folder (natsstore.NKeyFile), made on first
// start. A --nats-embed-config that defines client authorization of its own is its
// author's to keep: intentd adds no user to it, and connects as one of its users, named
// by --nats-nkey, --nats-creds or --nats-token.
func (m *Main) embedNATS() (*natsstore.Embedded, error) {
	c := m.Config
	dir := filepath.Join(c.DataDir, "nats")
	given := c.natsCredentials()
	opts := natsstore.EmbedOptions{Dir: dir, ConfigFile: c.Nats.EmbedConfig, Logger: m.logger, ConfigAuthorizes: len(given) > 0}
	if len(given) == 0 {
		opts.NKeyFile = filepath.Join(dir, natsstore.NKeyFile)
	}
	srv, err := natsstore.Embed(opts)
	switch {
	case errors.Is(err, natsstore.ErrOwnAuthorization):
		return nil, fmt.Errorf("--nats-embed-config %s defines client authorization of its own: give intentd one of its users with --nats-nkey, --nats-creds or --nats-token (docs/operating.md, \"Running on NATS\")",
			c.Nats.EmbedConfig)
	case errors.Is(err, natsstore.ErrNoAuthorization) && c.Nats.EmbedConfig == "":
		return nil, fmt.Errorf("%s with --nats-embed: the embedded server admits only intentd, with the credential it makes in %s; leave %[1]s out",
			given[0], filepath.Join(dir, natsstore.NKeyFile))
	case errors.Is(err, natsstore.ErrNoAuthorization):
		return nil, fmt.Errorf("%[1]s with --nats-embed is for a --nats-embed-config that defines client authorization, and %[2]s defines none, so its server would admit anyone: "+
			"leave %[1]s out, and intentd makes a credential of its own in %[3]s", given[0], c.Nats.EmbedConfig, filepath.Join(dir, natsstore.NKeyFile))
	}
	return srv, err
}
