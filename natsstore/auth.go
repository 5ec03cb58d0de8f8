package natsstore

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/intentd/intentd/internal/secretfile"
)

// NKeyFile is the name of the embedded server's credential in its folder: the seed of the
// one NATS user it admits, intentd's own connection.
//
// An NKey rather than a token: the server keeps only the public key, and the seed never
// crosses the connection (the client signs the server's nonce with it), so neither the
// server's memory nor a captured handshake gives it away.
const NKeyFile = "intentd.nk"

// maxNKeyFileBytes bounds what is read of a seed file: a seed is 58 characters, a
// credentials file with a JWT a few kilobytes.
const maxNKeyFileBytes = 16 << 10

// LoadNKey reads the NKey user seed in path. A file that group or others may read, or that
// holds no user seed, is refused: the seed is a password.
func LoadNKey(path string) (nkeys.KeyPair, error) {
	text, err := secretfile.ReadKey(path, maxNKeyFileBytes)
	if err != nil {
		return nil, fmt.Errorf("nats credential: %w", err)
	}
	kp, err := nkeys.ParseDecoratedNKey(text)
	if err != nil {
		return nil, fmt.Errorf("nats credential %s: not an NKey seed (%v); restore the file", path, err)
	}
	if pub, err := kp.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("nats credential %s: the seed is not a user's (its public key must start with U); restore the file", path)
	}
	return kp, nil
}

// loadOrCreateNKey loads the seed in path, or, when there is no file, makes a user key and
// writes its seed there with mode 0600. A file that exists but cannot be used is an
// error, never replaced: whoever was given the seed to reach the server would be locked
// out, and a damaged file is worth a look.
func loadOrCreateNKey(path string) (kp nkeys.KeyPair, created bool, err error) {
	kp, err = LoadNKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return kp, false, err
	}
	if kp, err = nkeys.CreateUser(); err != nil {
		return nil, false, fmt.Errorf("nats credential: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, false, fmt.Errorf("nats credential: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("nats credential: %w", err)
	}
	err = secretfile.WriteNew(path, append(seed, '\n'))
	if errors.Is(err, fs.ErrExist) {
		// Another process started on the same folder and won the race: use its key.
		kp, err = LoadNKey(path)
		return kp, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("nats credential: %w", err)
	}
	return kp, true, nil
}

// authOptions are the connection's options of Options' credential and TLS.
func authOptions(opts Options) ([]nats.Option, error) {
	given := 0
	for _, c := range []string{opts.Creds, opts.Token, opts.NKey} {
		if c != "" {
			given++
		}
	}
	if given > 1 {
		return nil, errors.New("nats store: give one of a credentials file, a token or an NKey seed")
	}
	// A server that refuses the credential twice in a row would otherwise make the client
	// close the connection for good: a credential revoked and restored, or a server whose
	// configuration is being reloaded, must not end the service's store.
	nopts := []nats.Option{nats.IgnoreAuthErrorAbort()}
	switch {
	case opts.Creds != "":
		nopts = append(nopts, nats.UserCredentials(opts.Creds))
	case opts.Token != "":
		nopts = append(nopts, nats.Token(opts.Token))
	case opts.NKey != "":
		o, err := nkeyOption(opts.NKey)
		if err != nil {
			return nil, err
		}
		nopts = append(nopts, o)
	}
	if opts.TLSCA != "" {
		nopts = append(nopts, nats.RootCAs(opts.TLSCA))
	}
	if opts.OnlyURLs {
		nopts = append(nopts, nats.IgnoreDiscoveredServers())
	}
	return nopts, nil
}

// nkeyOption signs the server's nonce with the seed in path, read once: a seed file
// damaged or removed later does not stop the reconnections of a running store.
func nkeyOption(path string) (nats.Option, error) {
	kp, err := LoadNKey(path)
	if err != nil {
		return nil, err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return nats.Nkey(pub, kp.Sign), nil
}

// Errors of Embed about a configuration file's client authorization, for the caller to
// say which of its settings to change.
var (
	// ErrOwnAuthorization: the configuration defines client authorization of its own, and
	// the caller asked the server to admit its NKey user beside it.
	ErrOwnAuthorization = errors.New("the configuration defines client authorization of its own")
	// ErrNoAuthorization: the caller will connect with a credential of the configuration's
	// authorization, and the configuration defines none, so the server would admit anyone.
	ErrNoAuthorization = errors.New("the configuration defines no client authorization")
)

// clientAuthorization reports whether a server configuration says who may connect as a
// client: users or NKeys (in accounts or not), a token, a user and password, operators'
// JWTs or an authorization callout.
// A no_auth_user admits whoever sends no credential as that user: such a
// configuration authorizes nobody.
func clientAuthorization(so *server.Options) bool {
	if so.NoAuthUser != "" {
		return false
	}
	return len(so.Users) > 0 || len(so.Nkeys) > 0 || so.Username != "" || so.Authorization != "" ||
		len(so.TrustedOperators) > 0 || len(so.TrustedKeys) > 0 || so.AuthCallout != nil
}

// admitNKey makes the server admit the user whose seed is in path, made there on first
// start, and no one else. The user may connect as a client only: not over websocket,
// MQTT or as a leaf node, listeners a configuration might open without an authorization
// of their own. It is in the global account, where the store's stream lives.
func admitNKey(so *server.Options, path string, log *slog.Logger) error {
	kp, created, err := loadOrCreateNKey(path)
	if err != nil {
		return err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return fmt.Errorf("nats credential %s: %w", path, err)
	}
	if created && log != nil {
		log.Info("created the embedded NATS server's credential", "file", path, "user", pub)
	}
	so.Nkeys = append(so.Nkeys, &server.NkeyUser{Nkey: pub, AllowedConnectionTypes: map[string]struct{}{"STANDARD": {}}})
	return nil
}

// checkRoutes refuses cluster routes that any process reaching them beyond the loopback
// interface could join: a route is another server, trusted with every account's
// messages, so an unauthenticated one bypasses every client credential. Routes on
// loopback only are allowed with a warning, for clusters of servers on one machine
// under test; anything local can still join them.
func checkRoutes(so *server.Options, log *slog.Logger) error {
	if so.Cluster.Port == 0 {
		return nil
	}
	if so.Cluster.Username != "" && so.Cluster.Password != "" || so.Cluster.TLSConfig != nil && so.Cluster.TLSConfig.ClientAuth == tls.RequireAndVerifyClientCert {
		return nil
	}
	addr := net.JoinHostPort(so.Cluster.Host, fmt.Sprint(so.Cluster.Port))
	if ip := net.ParseIP(so.Cluster.Host); so.Cluster.Host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("embedded nats: the cluster listens on %s with no route authorization, so any process that reaches it joins as a server "+
			"and reads every record: give the cluster block authorization { user, password } (and the routes' URLs that user), or tls { verify: true }", addr)
	}
	if log != nil {
		log.Warn("embedded nats: the cluster's routes have no authorization: any process on this machine can join as a server and read every record; "+
			"give the cluster block authorization { user, password }", "cluster_listen", addr)
	}
	return nil
}
