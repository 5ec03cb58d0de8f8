package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	tclient "github.com/transparency-dev/tessera/client"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	iproof "github.com/intentd/intentd/proof"
)

// logCmd is "intentctl log": the transparency log of outcomes (docs/proofs.md).
func (c *cli) logCmd(args []string) error {
	if len(args) == 0 {
		return usagef("want watch or get N")
	}
	c.enter(args[0])
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(c.stdout, "Usage: intentctl log %s\n\n%s.\n\n\"intentctl log watch -h\" and \"intentctl log get -h\" list their flags.\n", c.cmd.args, c.cmd.help)
		return nil
	case "watch":
		return c.logWatch(args[1:])
	case "get":
		return c.logGet(args[1:])
	}
	return usagef("unknown log command %q: want watch or get N", args[0])
}

// logState is what log watch keeps between checkpoints: the log it watches (origin and
// key, fixed on first sight) and the newest checkpoint it verified.
type logState struct {
	Origin     string `json:"origin"`
	PublicKey  string `json:"public_key"`
	Checkpoint string `json:"checkpoint"`
}

// readLogState reads a state file; a missing one is no state. It verifies the stored
// checkpoint again, so that a state file edited by hand cannot move the watch's
// starting point.
func readLogState(path string) (*logState, *log.Checkpoint, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	st, cp, err := parseLogState(data)
	if err != nil {
		return nil, nil, fmt.Errorf("state file %s: %w", path, err)
	}
	return st, cp, nil
}

// parseLogState decodes and checks the contents of a state file.
func parseLogState(data []byte) (*logState, *log.Checkpoint, error) {
	var st logState
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, nil, fmt.Errorf("not a log watch state: %v", err)
	}
	key, err := crypto.DecodeBase58(st.PublicKey)
	if err != nil || len(key) != ed25519.PublicKeySize {
		return nil, nil, errors.New("public_key is not the Base58 of a 32-byte Ed25519 key")
	}
	cp, err := iproof.ParseCheckpoint([]byte(st.Checkpoint), st.Origin, key)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: %v", err)
	}
	return &st, cp, nil
}

func writeLogState(path string, st *logState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// logTarget is the log a command reads: where, its origin and the key it signs with.
type logTarget struct {
	fetch  *tclient.HTTPFetcher
	origin string
	key    ed25519.PublicKey
	// policy, when set, is the witness policy every checkpoint must meet.
	policy *iproof.WitnessPolicy
}

// target finds the log of the server: its origin and key from --key and GET /info.
// A key given with --key (or kept in the state) is what the log is checked against;
// one read from the server only shows that the server signs consistently.
func (c *cli) target(keyText string) (*logTarget, error) {
	api, err := c.api()
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.call()
	defer cancel()
	info, err := api.Info(ctx)
	if err != nil {
		return nil, c.reach(err)
	}
	if info.LogOrigin == "" {
		return nil, &exitError{exitRefused, fmt.Errorf("%s keeps no transparency log", api.BaseURL())}
	}
	if keyText == "" {
		keyText = info.PublicKey
	}
	key, err := crypto.DecodeBase58(strings.TrimSpace(keyText))
	if err != nil || len(key) != ed25519.PublicKeySize {
		return nil, usagef("--key: want the Base58 of a 32-byte Ed25519 public key")
	}
	u, err := url.Parse(strings.TrimSuffix(api.BaseURL(), "/") + "/log/")
	if err != nil {
		return nil, usagef("--server: %v", err)
	}
	f, err := tclient.NewHTTPFetcher(u, api.HTTP())
	if err != nil {
		return nil, err
	}
	if api.Token != "" {
		f.SetAuthorizationHeader("Bearer " + api.Token)
	}
	return &logTarget{fetch: f, origin: info.LogOrigin, key: key}, nil
}

// checkpoint fetches and verifies the log's newest checkpoint.
func (c *cli) checkpoint(t *logTarget) (*log.Checkpoint, []byte, error) {
	ctx, cancel := c.call()
	defer cancel()
	raw, err := t.fetch.ReadCheckpoint(ctx)
	if err != nil {
		return nil, nil, c.reach(err)
	}
	cp, err := iproof.ParseCheckpoint(raw, t.origin, t.key)
	if err != nil {
		return nil, nil, &exitError{exitVerify, fmt.Errorf("the checkpoint does not verify: %v", err)}
	}
	if t.policy != nil {
		if err := t.policy.CheckLogKey(t.origin, t.key); err != nil {
			return nil, nil, &exitError{exitVerify, fmt.Errorf("--log-policy: %v", err)}
		}
		if _, err := t.policy.CheckQuorum(raw); err != nil {
			var ve *iproof.VerifyError
			msg := err.Error()
			if errors.As(err, &ve) {
				msg = ve.Message
			}
			return nil, nil, &exitError{exitVerify, fmt.Errorf("checkpoint %d refused: %s", cp.Size, msg)}
		}
	}
	return cp, raw, nil
}

// errFork is the error of a log that showed two histories: exit 4, loudly.
func errFork(format string, args ...any) error {
	return &exitError{exitVerify, fmt.Errorf("FORK: "+format, args...)}
}

func (c *cli) logWatch(args []string) error {
	fs := c.flags("log watch")
	statePath := fs.String("state", "", "file of the newest checkpoint verified (default: intentctl/log-<origin>.json in the user's config folder)")
	keyText := fs.String("key", "", "the service's public key (Base58); default: the one in the state, else the server's (GET /info)")
	every := fs.Duration("interval", time.Second, "how often to fetch the checkpoint")
	once := fs.Bool("once", false, "check the newest checkpoint once and exit")
	grace := fs.Duration("grace", 10*time.Second, "how long a checkpoint older than the one seen may persist (a lagging cluster member) before it is reported as a fork")
	policyFile := fs.String("log-policy", "", "a witness policy (C2SP tlog-policy): a checkpoint without enough valid cosignatures for its quorum is refused")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if err := want(pos, 0, "no arguments"); err != nil {
		return err
	}
	policy, err := readLogPolicy(*policyFile)
	if err != nil {
		return err
	}
	t, err := c.target(*keyText)
	if err != nil {
		return err
	}
	t.policy = policy
	if *statePath == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return usagef("--state: %v", err)
		}
		*statePath = filepath.Join(dir, "intentctl", "log-"+strings.NewReplacer("/", "_", ":", "_").Replace(t.origin)+".json")
	}
	st, seen, err := readLogState(*statePath)
	if err != nil {
		return &exitError{exitVerify, err}
	}
	if st != nil {
		if st.Origin != t.origin {
			return errFork("the server now names its log %q, the state file %q", t.origin, st.Origin)
		}
		key, _ := crypto.DecodeBase58(st.PublicKey)
		if *keyText == "" {
			t.key = key
		} else if !bytes.Equal(key, t.key) {
			return usagef("--key differs from the key in %s", *statePath)
		}
	}
	var olderSince time.Time
	for {
		cp, raw, err := c.checkpoint(t)
		if err != nil {
			return err
		}
		switch {
		case seen == nil:
			fmt.Fprintf(c.stdout, "checkpoint %d %s: first seen, kept in %s\n", cp.Size, b64(cp.Hash), *statePath)
		case cp.Size == seen.Size && !bytes.Equal(cp.Hash, seen.Hash):
			return errFork("two trees of %d leaves: root %s seen before, %s now", cp.Size, b64(seen.Hash), b64(cp.Hash))
		case cp.Size == seen.Size:
			cp = nil // nothing new
		case cp.Size < seen.Size:
			// The server may prove the smaller tree a prefix of the one seen (a
			// member of a cluster that lags). If not, it rolled back history,
			// unless it catches up within the grace.
			if err := c.consistent(t, cp, seen, seen.Size); err == nil {
				cp = nil
				break
			} else if errors.Is(err, errInconsistent) {
				return errFork("checkpoint %d %s is not a prefix of %d %s seen before: %v", cp.Size, b64(cp.Hash), seen.Size, b64(seen.Hash), err)
			}
			if olderSince.IsZero() {
				olderSince = time.Now()
				fmt.Fprintf(c.stderr, "warning: checkpoint %d is older than %d seen before; waiting up to %s for it to catch up\n", cp.Size, seen.Size, *grace)
			}
			if time.Since(olderSince) >= *grace {
				return errFork("the log went back from %d leaves to %d and cannot show the two consistent", seen.Size, cp.Size)
			}
			cp = nil
		default:
			if err := c.consistent(t, seen, cp, cp.Size); err != nil {
				if errors.Is(err, errInconsistent) {
					return errFork("checkpoint %d %s is not an extension of %d %s seen before: %v", cp.Size, b64(cp.Hash), seen.Size, b64(seen.Hash), err)
				}
				return err
			}
			fmt.Fprintf(c.stdout, "checkpoint %d %s: consistent with %d\n", cp.Size, b64(cp.Hash), seen.Size)
		}
		if cp != nil {
			olderSince = time.Time{}
			seen = cp
			st = &logState{Origin: t.origin, PublicKey: crypto.EncodeBase58(t.key), Checkpoint: string(raw)}
			if err := writeLogState(*statePath, st); err != nil {
				return fmt.Errorf("keep the checkpoint: %w", err)
			}
		} else if seen.Size > 0 && olderSince.IsZero() && *once {
			fmt.Fprintf(c.stdout, "checkpoint %d %s: as seen before\n", seen.Size, b64(seen.Hash))
		}
		if *once && olderSince.IsZero() {
			return nil
		}
		select {
		case <-c.ctx.Done():
			return nil
		case <-time.After(*every):
		}
	}
}

// errInconsistent marks a consistency proof that was had and did not verify, apart
// from a proof that could not be had.
var errInconsistent = errors.New("inconsistent")

// consistent checks that the tree of small is a prefix of the tree of large, with a
// proof built from the server's tiles for a tree of size tiles.
func (c *cli) consistent(t *logTarget, small, large *log.Checkpoint, tiles uint64) error {
	if small.Size == 0 {
		return nil
	}
	ctx, cancel := c.call()
	defer cancel()
	pb, err := tclient.NewProofBuilder(ctx, tiles, t.fetch.ReadTile)
	if err != nil {
		return c.reach(err)
	}
	p, err := pb.ConsistencyProof(ctx, small.Size, large.Size)
	if err != nil {
		return c.reach(err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, small.Size, large.Size, p, small.Hash, large.Hash); err != nil {
		return fmt.Errorf("%w: %v", errInconsistent, err)
	}
	return nil
}

func (c *cli) logGet(args []string) error {
	fs := c.flags("log get")
	keyText := fs.String("key", "", "the service's public key (Base58); default: the server's (GET /info)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if err := want(pos, 1, "N"); err != nil {
		return err
	}
	index, err := strconv.ParseUint(pos[0], 10, 64)
	if err != nil {
		return usagef("N: want a leaf index, an integer from 0")
	}
	t, err := c.target(*keyText)
	if err != nil {
		return err
	}
	cp, _, err := c.checkpoint(t)
	if err != nil {
		return err
	}
	if index >= cp.Size {
		return &exitError{exitRefused, fmt.Errorf("leaf %d is not in the log: its checkpoint has %d leaves", index, cp.Size)}
	}
	ctx, cancel := c.call()
	defer cancel()
	bundle, err := tclient.GetEntryBundle(ctx, t.fetch.ReadEntryBundle, index/256, cp.Size)
	if err != nil {
		return c.reach(err)
	}
	if int(index%256) >= len(bundle.Entries) {
		return &exitError{exitVerify, fmt.Errorf("the entry bundle of leaf %d has %d entries", index, len(bundle.Entries))}
	}
	entry := bundle.Entries[index%256]
	pb, err := tclient.NewProofBuilder(ctx, cp.Size, t.fetch.ReadTile)
	if err != nil {
		return c.reach(err)
	}
	path, err := pb.InclusionProof(ctx, index)
	if err != nil {
		return c.reach(err)
	}
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, index, cp.Size, iproof.LeafHash(entry), path, cp.Hash); err != nil {
		return &exitError{exitVerify, fmt.Errorf("leaf %d is not in the tree its checkpoint signs: %v", index, err)}
	}
	e, err := intentd.ParseLogEntry(entry)
	if err != nil {
		return &exitError{exitVerify, err}
	}
	if c.g.json {
		return c.printJSON(struct {
			Index    uint64           `json:"leaf_index"`
			TreeSize uint64           `json:"tree_size"`
			Entry    intentd.LogEntry `json:"entry"`
		}{index, cp.Size, e})
	}
	w := c.stdout
	fmt.Fprintf(w, "leaf %d of %d (inclusion verified against checkpoint %s)\n", index, cp.Size, b64(cp.Hash))
	fmt.Fprintf(w, "  event id        %d\n  outcome         %s\n  intent          %s\n  event digest    %s\n", e.EventID, e.Type, e.IntentID, e.EventDigest)
	if e.ReceiptDigest != "" {
		fmt.Fprintf(w, "  receipt digest  %s\n", e.ReceiptDigest)
	} else {
		fmt.Fprintf(w, "  receipt         none\n")
	}
	return nil
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
