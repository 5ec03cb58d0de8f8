package natsstore

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbedOptions configure an embedded NATS server.
type EmbedOptions struct {
	// Dir holds JetStream's files. Required unless ConfigFile names a store_dir.
	Dir string
	// ConfigFile is a nats-server configuration file read first; Dir and a non-zero
	// Port override what it says. It is how clustering, accounts and TLS are set.
	ConfigFile string
	// Host and Port are where clients connect; the zero values mean loopback and a free
	// port, so tests do not collide.
	Host string
	Port int
	// Logger receives the server's messages at debug level (warnings and errors at their
	// own); nil discards them.
	Logger *slog.Logger
	// NKeyFile, when set, is the seed file of the one user the server admits as a
	// client: made (mode 0600) on first start, read after; a file that cannot be used
	// is an error. With it, a ConfigFile that defines client authorization of its own is
	// refused (ErrOwnAuthorization): adding a user to it would turn off a token or a
	// single user it names, and which account the user belongs in is its author's call.
	NKeyFile string
	// ConfigAuthorizes says the caller connects with a credential of ConfigFile's own
	// client authorization; a ConfigFile without one, or none, is refused
	// (ErrNoAuthorization), since the server would admit anyone.
	ConfigAuthorizes bool
}

// Embedded is a NATS server running in this process.
type Embedded struct {
	srv      *server.Server
	nkeyFile string
	servers  int
}

// Embed starts a NATS server with JetStream in this process and waits until it takes
// connections. Every JetStream write is synced to disk before it is acknowledged
// (sync_interval always): the store promises that an answered write survives a power
// cut, and the server's default syncs only every two minutes.
func Embed(opts EmbedOptions) (*Embedded, error) {
	so := &server.Options{}
	if opts.ConfigFile != "" {
		var err error
		if so, err = server.ProcessConfigFile(opts.ConfigFile); err != nil {
			return nil, fmt.Errorf("nats config %s: %w", opts.ConfigFile, err)
		}
	}
	if err := checkRoutes(so, opts.Logger); err != nil {
		return nil, err
	}
	own := clientAuthorization(so)
	switch {
	case opts.NKeyFile != "" && own:
		return nil, fmt.Errorf("embedded nats: %s: %w", opts.ConfigFile, ErrOwnAuthorization)
	case opts.ConfigAuthorizes && !own:
		return nil, fmt.Errorf("embedded nats: %s: %w", cmp.Or(opts.ConfigFile, "no configuration file"), ErrNoAuthorization)
	case opts.NKeyFile != "":
		if err := admitNKey(so, opts.NKeyFile, opts.Logger); err != nil {
			return nil, err
		}
	}
	so.JetStream = true
	so.SyncAlways = true
	so.NoSigs = true
	if opts.Dir != "" {
		so.StoreDir = opts.Dir
	}
	if so.StoreDir == "" {
		return nil, fmt.Errorf("embedded nats: no directory for JetStream")
	}
	if opts.Host != "" || so.Host == "" {
		so.Host = opts.Host
		if so.Host == "" {
			so.Host = "127.0.0.1"
		}
	}
	switch {
	case opts.Port != 0:
		so.Port = opts.Port
	case so.Port == 0:
		so.Port = server.RANDOM_PORT
	}
	srv, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if opts.Logger != nil {
		srv.SetLoggerV2(serverLogger{opts.Logger}, false, false, false)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded nats on %s did not start in 10s", net.JoinHostPort(so.Host, strconv.Itoa(so.Port)))
	}
	return &Embedded{srv: srv, nkeyFile: opts.NKeyFile, servers: clusterSize(so)}, nil
}

// clusterSize is how many servers a configuration names: itself, and the other addresses
// its routes list (a list usually names every server, this one's own address included).
func clusterSize(so *server.Options) int {
	if so.Cluster.Port == 0 {
		return 1
	}
	own := net.JoinHostPort(so.Cluster.Host, strconv.Itoa(so.Cluster.Port))
	seen := map[string]bool{own: true}
	for _, u := range so.Routes {
		seen[u.Host] = true
	}
	return len(seen)
}

// EmbedCluster starts n servers in this process as one JetStream cluster on loopback,
// each from a configuration file it writes under dir, as --nats-embed-config would be
// given one, with its files in a folder of its own there. It returns them once every one
// takes connections; the cluster elects its leaders after that. Their routes
// authenticate with a password made for them; their clients need none. It is for tests
// and local trials of what a NATS cluster does when a server is lost.
func EmbedCluster(dir string, n int) ([]*Embedded, error) {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	pass := hex.EncodeToString(secret)
	ports := make([]int, 2*n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats-route://route:%s@127.0.0.1:%d", pass, ports[n+i]))
	}
	srvs := make([]*Embedded, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		own := filepath.Join(dir, fmt.Sprintf("n%d", i))
		if err := os.MkdirAll(own, 0o700); err != nil {
			return nil, err
		}
		conf := filepath.Join(own, "nats.conf")
		text := fmt.Sprintf("server_name: n%d\nlisten: 127.0.0.1:%d\ncluster { name: c\n listen: 127.0.0.1:%d\n authorization { user: route, password: %s }\n routes: [%s] }\n",
			i, ports[i], ports[n+i], pass, strings.Join(routes, ", "))
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return nil, err
		}
		wg.Go(func() { srvs[i], errs[i] = Embed(EmbedOptions{Dir: own, ConfigFile: conf}) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, srv := range srvs {
			if srv != nil {
				srv.Shutdown()
			}
		}
		return nil, err
	}
	return srvs, nil
}

// NKeyFile is the seed file of the user the server admits, or "" when it was started
// without one (EmbedOptions.NKeyFile).
func (e *Embedded) NKeyFile() string { return e.nkeyFile }

// Servers is how many servers its configuration names for its cluster, itself included:
// 1 when it is not clustered. The store's replicas follow it.
func (e *Embedded) Servers() int { return e.servers }

// Name is the server's name, as JetStream names a stream's leader and replicas.
func (e *Embedded) Name() string { return e.srv.Name() }

// URL is the address clients connect to, nats://host:port.
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// Shutdown stops the server and waits until it is down.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// serverLogger sends the server's messages to slog. Its notices are many and routine, so
// they go at debug level.
type serverLogger struct{ l *slog.Logger }

func (s serverLogger) Noticef(format string, v ...any) {
	s.l.Debug(fmt.Sprintf(format, v...), "component", "nats")
}
func (s serverLogger) Warnf(format string, v ...any) {
	s.l.Warn(fmt.Sprintf(format, v...), "component", "nats")
}
func (s serverLogger) Fatalf(format string, v ...any) {
	s.l.Error(fmt.Sprintf(format, v...), "component", "nats")
}
func (s serverLogger) Errorf(format string, v ...any) {
	if strings.HasPrefix(format, routeDialError) {
		// A peer not up yet: every start of a cluster's servers meets it, and an
		// alert on errors would page someone for each. A peer that stays down is
		// reported again, and the store's own health says what it costs.
		s.l.Warn(fmt.Sprintf(format, v...), "component", "nats")
		return
	}
	s.l.Error(fmt.Sprintf(format, v...), "component", "nats")
}

// routeDialError begins the message the NATS server logs when a route to a peer of its
// cluster cannot be dialled.
const routeDialError = "Error trying to connect to route"

func (s serverLogger) Debugf(format string, v ...any) {
	s.l.Debug(fmt.Sprintf(format, v...), "component", "nats")
}
func (s serverLogger) Tracef(format string, v ...any) {
	s.l.Debug(fmt.Sprintf(format, v...), "component", "nats")
}
