package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/crypto"
	iproof "github.com/intentd/intentd/proof"
	"github.com/intentd/intentd/tlog"
)

// loggedEngine is the engine as the HTTP layer sees it beside a transparency log: the
// event subscribers it counts are the streams' clients, without the log's own.
type loggedEngine struct {
	*actors.Engine
	log *tlog.Log
}

// Subscribers counts the engine's subscribers but the log's.
func (e loggedEngine) Subscribers() int {
	n := e.Engine.Subscribers()
	if e.log.Following() && n > 0 {
		n--
	}
	return n
}

// openTlog opens the transparency log, refusing a log signed by another key than the
// receipt key unless the key was changed on purpose: --rotate-signing-key, or a key
// file named by --signing-key, which the docs give as the way to change it.
func (m *Main) openTlog(key *crypto.SigningKey) error {
	dir := m.Config.Tlog.Dir
	if dir == "" {
		dir = filepath.Join(m.Config.DataDir, "tlog")
	}
	// Both stores keep the log's entries, so that the log outlives the events' retention
	// and every node of a cluster rebuilds the same tree (docs/proofs.md).
	shared, _ := m.store.(intentd.LogStore)
	witnesses, err := m.witnessPolicy()
	if err != nil {
		return err
	}
	l, err := tlog.Open(tlog.Options{Dir: dir, Key: key, Origin: m.Config.Tlog.Origin, Logger: m.logger.With("component", "tlog"), Store: shared,
		AcceptKeyChange: m.Config.RotateSigningKey || m.Config.SigningKey != "",
		Witnesses:       witnesses, WitnessInterval: m.Config.Tlog.WitnessInterval})
	var keyErr *tlog.KeyError
	var originErr *tlog.OriginError
	if errors.As(err, &originErr) {
		was := "--tlog-origin " + originErr.Origin
		if originErr.Origin == tlog.DefaultOrigin(key) {
			was = "no --tlog-origin"
		}
		return fmt.Errorf("--tlog-origin: the transparency log in %s has %d leaves under the origin %s, and an origin cannot change once a log has leaves "+
			"(its readers and witnesses know the log by it); start with %s (docs/proofs.md, \"The checkpoints and the key\")",
			dir, originErr.Size, originErr.Origin, was)
	}
	if errors.As(err, &keyErr) {
		return fmt.Errorf("signing key: %s (key id %s) is not the key that signed the transparency log in %s, whose checkpoint of %d leaves names the origin %s; "+
			"restore the key file that signed it, or start once with --rotate-signing-key to change the key on purpose (docs/proofs.md, \"Rotating the key\")",
			filepath.Join(m.Config.DataDir, crypto.SigningKeyFile), key.ID(), dir, keyErr.Size, keyErr.Origin)
	}
	if err != nil {
		return fmt.Errorf("open the transparency log: %w", err)
	}
	m.tlog, m.tlogDir = l, dir
	return nil
}

// runTlog starts the transparency log following the engine's events.
func (m *Main) runTlog() {
	l := m.tlog
	ctx, cancel := context.WithCancel(context.Background())
	m.stopTlog, m.tlogDone = cancel, make(chan struct{})
	go func() {
		defer close(m.tlogDone)
		_ = l.Run(ctx, m.engine)
	}()
	m.logger.Info("transparency log", "component", "tlog", "dir", m.tlogDir, "origin", l.Origin(), "leaves", l.Size(), "witnesses", len(l.Witnesses()))
}

// witnessPolicy reads the --tlog-witnesses file: a C2SP tlog-policy whose every
// witness has the URL the log asks it at. Nil without the flag.
func (m *Main) witnessPolicy() (*iproof.WitnessPolicy, error) {
	path := m.Config.Tlog.Witnesses
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--tlog-witnesses: %w", err)
	}
	p, err := iproof.ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("--tlog-witnesses %s: %w", path, err)
	}
	if len(p.Witnesses) == 0 {
		return nil, fmt.Errorf("--tlog-witnesses %s: the policy names no witness", path)
	}
	for _, w := range p.Witnesses {
		if w.URL == "" {
			return nil, fmt.Errorf("--tlog-witnesses %s: witness %s has no URL: the log cannot ask it (witness NAME VKEY URL)", path, w.Name)
		}
	}
	return p, nil
}

// originChecked is the cluster's log as a member that keeps none serves it, which says,
// once, when the checkpoints it passes on name another origin than its GET /info does:
// the members that keep the log were started with another --tlog-origin than this one,
// and a reader who pinned the origin from /info refuses every checkpoint it serves.
type originChecked struct {
	intentd.LogReader
	origin string
	log    *slog.Logger
	warned atomic.Bool
}

// Checkpoint reads the cluster's checkpoint and checks its origin line.
func (o *originChecked) Checkpoint(ctx context.Context) ([]byte, error) {
	cp, err := o.LogReader.Checkpoint(ctx)
	if err == nil {
		if first, _, _ := strings.Cut(string(cp), "\n"); first != o.origin && !o.warned.Swap(true) {
			o.log.Error("the transparency log the members keeping it serve has another origin than this member's --tlog-origin: start it with --tlog-origin "+first,
				"origin", first, "tlog_origin", o.origin)
		}
	}
	return cp, err
}
