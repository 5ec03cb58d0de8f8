package tlog

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/intentd/intentd/crypto"
	iproof "github.com/intentd/intentd/proof"
)

// checkpoint is a signed checkpoint with the size and root it commits to, kept beside
// its note so that the next is signed only once the log has grown past it.
type checkpoint struct {
	size uint64
	root []byte
	note []byte
	// cosigners are the witnesses whose cosignature lines note carries, by their
	// names in the policy; nil for the log's own checkpoints.
	cosigners []string
}

// publish signs a checkpoint of every leaf the log holds, unless the newest covers
// them already, and returns the newest.
func (l *Log) publish() (*checkpoint, error) {
	l.signMu.Lock()
	defer l.signMu.Unlock()
	cur := l.cp.Load()
	l.mu.Lock()
	size := l.rng.End()
	if cur != nil && cur.size >= size || l.check != nil {
		// A log still short of a checkpoint it signed signs none smaller: a reader
		// who saw the larger one would take the smaller for a fork.
		l.mu.Unlock()
		return cur, nil
	}
	root, err := l.rng.GetRootHash(nil)
	l.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("tlog: root: %w", err)
	}
	if root == nil {
		root = rfc6962.DefaultHasher.EmptyRoot()
	}
	c, err := l.sign(size, root)
	if err != nil {
		return nil, err
	}
	l.cp.Store(c)
	return c, nil
}

// sign signs a checkpoint of the tree of size leaves and root, and stores it as the
// newest.
func (l *Log) sign(size uint64, root []byte) (*checkpoint, error) {
	text := log.Checkpoint{Origin: l.origin, Size: size, Hash: root}.Marshal()
	signed, err := note.Sign(&note.Note{Text: string(text)}, l.signer)
	if err != nil {
		return nil, fmt.Errorf("tlog: sign checkpoint: %w", err)
	}
	if err := l.db.Set([]byte(keyCP), signed, pebble.Sync); err != nil {
		return nil, fmt.Errorf("tlog: store checkpoint: %w", err)
	}
	return &checkpoint{size: size, root: root, note: signed}, nil
}

// checkpoints signs a checkpoint each interval in which leaves came.
func (l *Log) checkpoints(ctx context.Context) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if l.size.Load() > l.cp.Load().size {
				if _, err := l.publish(); err != nil {
					l.log.Error("the transparency log could not sign a checkpoint", "err", err)
				}
			}
		}
	}
}

// noteSigner signs checkpoints with the receipt key under the origin's name.
type noteSigner struct {
	name string
	hash uint32
	key  *crypto.SigningKey
}

func (s noteSigner) Name() string                    { return s.name }
func (s noteSigner) KeyHash() uint32                 { return s.hash }
func (s noteSigner) Sign(msg []byte) ([]byte, error) { return s.key.Sign(msg), nil }

// VerifierKey is the C2SP note verifier key of the checkpoints of a log under origin,
// signed with key: what a member of a cluster that keeps no log tells of the log it
// serves from another member, which signs under the same origin and key.
func VerifierKey(origin string, key *crypto.SigningKey) (string, error) {
	_, vkey, err := newSigner(origin, key)
	return vkey, err
}

// newSigner returns the note signer of origin and its verifier key.
func newSigner(origin string, key *crypto.SigningKey) (note.Signer, string, error) {
	v, err := iproof.LogVerifier(origin, key.PublicKey())
	if err != nil {
		return nil, "", fmt.Errorf("tlog: %w", err)
	}
	vkey, err := note.NewEd25519VerifierKey(origin, key.PublicKey())
	if err != nil {
		return nil, "", fmt.Errorf("tlog: %w", err)
	}
	return noteSigner{name: v.Name(), hash: v.KeyHash(), key: key}, vkey, nil
}
