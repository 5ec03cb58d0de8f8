package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/intentd/intentd/internal/testbin"

	"github.com/intentd/intentd/natsstore"
)

// testNATS is the NATS server the end-to-end tests keep state on, or "" for Pebble in
// each server's folder. INTENTD_TEST_STORE chooses: unset or "pebble"; "nats" for one
// server with JetStream started in this process; nats://HOST:PORT for one started by
// hand. The suite is the same on every store.
var testNATS string

func TestMain(m *testing.M) {
	if conf := os.Getenv(natsMemberEnv); conf != "" {
		runNATSMember(conf)
	}
	os.Exit(func() int {
		switch v := os.Getenv("INTENTD_TEST_STORE"); {
		case v == "" || v == "pebble":
		case v == "nats":
			dir, err := os.MkdirTemp("", "intentd-test-nats-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: dir})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer srv.Shutdown()
			testNATS = srv.URL()
		case strings.HasPrefix(v, "nats://"):
			testNATS = v
		default:
			fmt.Fprintf(os.Stderr, "INTENTD_TEST_STORE=%q: want pebble, nats or nats://HOST:PORT\n", v)
			return 2
		}
		// The programs the tests built to run as processes of their own go with them.
		defer testbin.Remove()
		return m.Run()
	}())
}

// natsMemberEnv makes this test binary a NATS server with the configuration file it
// names, and nothing else: the crash test runs the members of a JetStream cluster as
// processes of their own so that it can kill one with SIGKILL.
const natsMemberEnv = "INTENTD_TEST_NATS_MEMBER"

func runNATSMember(conf string) {
	srv, err := natsstore.Embed(natsstore.EmbedOptions{ConfigFile: conf})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("ready", srv.URL())
	select {} // until killed
}

// storeArgs are the flags that put a server started in dir on the tests' store, unless
// args already choose one. Each folder has a stream prefix of its own, so that servers
// do not meet and a restart on the same folder finds its state.
func storeArgs(dir string, args []string) []string {
	if testNATS == "" || slices.Contains(args, "--store") || slices.Contains(args, "--nats-embed") {
		return nil
	}
	sum := sha256.Sum256([]byte(dir))
	return []string{"--store", testNATS, "--nats-prefix", "t" + hex.EncodeToString(sum[:8])}
}

// ownStores skips a test that chooses its stores itself, or looks at Pebble's files,
// when the suite runs on NATS: it ran in the suite's run on Pebble.
func ownStores(t *testing.T) {
	t.Helper()
	if testNATS != "" {
		t.Skip("chooses its own stores; runs when INTENTD_TEST_STORE is pebble")
	}
}
