package httpsig

import (
	"crypto/ed25519"
	"sync"
	"sync/atomic"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// stdlibRules are the verification rules of Go's crypto/ed25519: a signature is
// accepted here exactly when crypto/ed25519.Verify accepts it, so that an agent, a
// verifier of proofs and this package never part on what an agent signed.
var stdlibRules = &voi.Options{Verify: voi.VerifyOptionsStdLib}

// verifyEd25519 reports whether sig is key's Ed25519 signature of msg; key and sig
// must have their lengths. It verifies with curve25519-voi under crypto/ed25519's
// rules because every signed proposal is verified, and on the service's machine voi
// takes 31 µs where crypto/ed25519 takes 44 (docs/benchmarks.md, "Signed proposals").
// An agent signs many proposals with one key, so the key is taken in voi's expanded
// form (decompressed, with its table of multiples) from expandedKeys once it has
// verified a signature, which saves its unpacking on each later proposal. The
// expanded key makes the same checks of the key as the plain one (voi's
// checkExpandedPublicKey is its unpackPublicKey, cached).
// TestVerifyEd25519AgreesWithStdLib and FuzzVerifyEd25519 hold it to crypto/ed25519's
// answers, through the cache and without it.
func verifyEd25519(key ed25519.PublicKey, msg, sig []byte) bool {
	if x, ok := expandedKeys.get([ed25519.PublicKeySize]byte(key)); ok {
		return voi.VerifyExpandedWithOptions(x, msg, sig, stdlibRules)
	}
	x, err := voi.NewExpandedPublicKey(voi.PublicKey(key))
	if err != nil {
		return false // not a point: crypto/ed25519 refuses it too
	}
	if !voi.VerifyExpandedWithOptions(x, msg, sig, stdlibRules) {
		return false
	}
	expandedKeys.put([ed25519.PublicKeySize]byte(key), x)
	return true
}

// maxKeys bounds the keys each of the caches expandedKeys and keyIDs holds. An
// expanded key is about 1.5 KB, so the two stay under 2 MB whatever keys callers send;
// a key is kept only once a signature verified under it, and past the bound a cache
// starts again empty, which costs each agent one slower check.
const maxKeys = 1024

// expandedKeys is the process's cache of expanded keys, and keyIDs its cache of the
// keys that keyids name: the signed proposals of every server in the process are
// verified by this package's functions, which take no state.
var (
	expandedKeys keyCache[[ed25519.PublicKeySize]byte, *voi.ExpandedPublicKey]
	keyIDs       keyCache[string, ed25519.PublicKey]
)

// keyCache is a bounded map of keys, safe for concurrent use. Reads take no lock, as
// every signed proposal reads it and few add to it.
type keyCache[K comparable, V any] struct {
	m sync.Map // K → V
	n atomic.Int64
}

// get is k's value, and whether it is kept.
func (c *keyCache[K, V]) get(k K) (V, bool) {
	if v, ok := c.m.Load(k); ok {
		return v.(V), true
	}
	var zero V
	return zero, false
}

// put keeps v as k's value, emptying the cache first when it holds maxKeys.
func (c *keyCache[K, V]) put(k K, v V) {
	if c.n.Load() >= maxKeys {
		c.m.Clear()
		c.n.Store(0)
	}
	if _, loaded := c.m.LoadOrStore(k, v); !loaded {
		c.n.Add(1)
	}
}

// len is the number of keys kept, for tests.
func (c *keyCache[K, V]) len() int { return int(c.n.Load()) }

// reset empties the cache, for tests.
func (c *keyCache[K, V]) reset() {
	c.m.Clear()
	c.n.Store(0)
}
