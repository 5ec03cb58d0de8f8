package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/httpsig"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/secretfile"
)

// agentKeyHeader is the first line of an agent's key file. An agent signs proposals
// and a person signs intents: keygen's and agent keygen's files say which they are, so
// that neither is used for the other's signatures by mistake.
const agentKeyHeader = "# intentctl agent Ed25519 private key (the Base58 of its 32-byte seed): keep it to the agent; sign proposals with --agent-key FILE"

// agent runs the agent subcommands: keygen.
func (c *cli) agent(args []string) error {
	if len(args) > 0 {
		c.enter(args[0])
	}
	switch {
	case len(args) > 0 && args[0] == "keygen":
		return c.agentKeygen(args[1:])
	case len(args) > 0 && args[0] == "sign":
		return c.agentSign(args[1:])
	}
	fs := c.flags("agent")
	if _, err := c.parse(fs, args); err != nil {
		return err
	}
	return usagef("want keygen [-o FILE] or sign URL BODY")
}

// agentSign prints the headers of an agent's signature of a POST of BODY to URL
// (Content-Digest, Signature-Input, Signature), one per line, as curl's -H @FILE reads
// them: a request signed by hand, for a client that cannot sign (docs/mandates.md).
func (c *cli) agentSign(args []string) error {
	flags := c.flags("agent sign")
	key := flags.String("agent-key", "", "the agent's key file (intentctl agent keygen)")
	tag := flags.String("agent-tag", "", "the tag of the signature, such as agent-payer-auth")
	window := flags.Duration("window", 5*time.Minute, "how long the signature is valid, at most 8m")
	pos, err := c.parse(flags, args)
	if err != nil {
		return err
	}
	if err := want(pos, 2, "URL BODY"); err != nil {
		return err
	}
	if *key == "" {
		return usagef("--agent-key FILE is required")
	}
	if *window <= 0 || *window > intentd.AgentSignatureMaxWindow {
		return usagef("--window %s: want more than 0 and at most %s", *window, intentd.AgentSignatureMaxWindow)
	}
	priv, err := loadAgentKey(*key)
	if err != nil {
		return fmt.Errorf("--agent-key: %w", err)
	}
	body := []byte(pos[1])
	if name, ok := strings.CutPrefix(pos[1], "@"); ok {
		if body, err = os.ReadFile(name); err != nil {
			return usagef("BODY %s: %v", pos[1], err)
		}
	}
	target := pos[0]
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	req, err := http.NewRequest(http.MethodPost, target, nil)
	if err != nil || req.URL.Host == "" {
		return usagef("URL %q: want the request's URL, such as http://127.0.0.1:8080/mandates/ID/purchases", pos[0])
	}
	now := time.Now()
	if err := httpsig.Sign(req, body, priv, httpsig.Params{Created: now, Expires: now.Add(*window), Tag: *tag}); err != nil {
		return err
	}
	for _, h := range []string{"Content-Digest", "Signature-Input", "Signature"} {
		fmt.Fprintf(c.stdout, "%s: %s\n", h, req.Header.Get(h))
	}
	return nil
}

// agentKeygen makes an agent's Ed25519 key pair: the private key for --agent-key, the
// public key (FILE.pub) for the intent's agents parameter.
func (c *cli) agentKeygen(args []string) error {
	flags := c.flags("agent")
	out := flags.String("o", "intentctl-agent.key", "file of the agent's private key; FILE.pub gets its public key")
	pos, err := c.parse(flags, args)
	if err != nil {
		return err
	}
	if err := want(pos, 0, "no arguments"); err != nil {
		return err
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("%s\n%s\n", agentKeyHeader, crypto.EncodeBase58(priv.Seed()))
	if err := secretfile.WriteNew(*out, []byte(body)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists; agent keygen never replaces a key file, choose another -o", *out)
		}
		return err
	}
	pubText := crypto.EncodeBase58(pub)
	if err := writeNewFile(*out+".pub", []byte(publicKeyHeader+"\n"+pubText+"\n"), 0o644); err != nil {
		return err
	}
	if c.g.json {
		return c.printJSON(map[string]string{"type": "agent-ed25519", "private_key_file": *out, "public_key_file": *out + ".pub", "public_key": pubText})
	}
	fmt.Fprintf(c.stdout, "agent private key: %s (mode 0600)\nagent public key:  %s\n%s\n", *out, *out+".pub", pubText)
	fmt.Fprintf(c.stdout, "delegate to it in an intent whose policy names an agents parameter: --attr agents=%s\n", pubText)
	return nil
}

// agentKeyFlags are the flags of a command that signs proposals as an agent.
type agentKeyFlags struct {
	file *string
	tag  *string
}

func addAgentKeyFlags(fs *flag.FlagSet) agentKeyFlags {
	return agentKeyFlags{
		file: fs.String("agent-key", "", "sign proposals as the agent of this key file (intentctl agent keygen), as an intent that delegates to agents requires"),
		tag:  fs.String("agent-tag", "", "with --agent-key: the tag of the signatures, such as agent-payer-auth"),
	}
}

// apply loads the agent key, when one is given, into the client.
func (f agentKeyFlags) apply(c *cli) error {
	if *f.file == "" {
		if *f.tag != "" {
			return usagef("--agent-tag goes with --agent-key")
		}
		return nil
	}
	key, err := loadAgentKey(*f.file)
	if err != nil {
		return fmt.Errorf("--agent-key: %w", err)
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	api.AgentKey, api.AgentTag = key, *f.tag
	return nil
}

// loadAgentKey reads an agent's private key file. A person's intent key (keygen's) is
// refused: an agent holding it could sign intents as the person.
func loadAgentKey(path string) (ed25519.PrivateKey, error) {
	// What the file is comes before how it is kept, as for --key (loadSigner).
	if err := whatKeyFile(path, "agent"); err != nil {
		return nil, err
	}
	b, err := readPrivateFile(path)
	if err != nil {
		return nil, err
	}
	if err := headerKind(path, b, "agent"); err != nil {
		return nil, err
	}
	seed, err := crypto.DecodeBase58(string(bytes.TrimSpace(crypto.StripComments(b))))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s: not an agent key file (want the Base58 of a 32-byte seed, as intentctl agent keygen writes)", path)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}
