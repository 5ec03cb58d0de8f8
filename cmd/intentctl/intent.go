package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
)

// intentWire is the intent object of spec 2.2, in the order the spec lists its fields.
type intentWire struct {
	ID       string        `json:"id"`
	PolicyID string        `json:"policy_id"`
	Attrs    *policy.Attrs `json:"attrs,omitempty"`
}

func (c *cli) intent(args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		args = []string{"new", "-h"} // intent has one subcommand: its flags are the help
	}
	if len(args) == 0 || args[0] != "new" {
		return usagef("want intent new ...")
	}
	fs := c.flags("intent new")
	policyID := fs.String("policy", "", "id of the policy the intent names")
	policyFile := fs.String("policy-file", "", "read the policy (for the attribute types) from this source file instead of the server")
	var attrs listFlag
	fs.Var(&attrs, "attr", "an attribute, NAME=VALUE (repeat); sets are comma-separated; types come from the policy")
	by := addSignFlags(fs)
	id := fs.String("id", "", "the intent's id (default: a fresh random UUID)")
	dryRun := fs.Bool("dry-run", false, "print the signed intent's JSON instead of submitting it")
	pos, err := c.parse(fs, args[1:])
	if err != nil {
		return err
	}
	if err := want(pos, 0, "only flags"); err != nil {
		return err
	}
	if *id, err = idOrFresh(*id, "id"); err != nil {
		return err
	}
	// The keys are read first: a key file that is wrong is found before the server is
	// asked anything.
	signers, err := by.load()
	if err != nil {
		return err
	}

	p, err := c.intentPolicy(*policyID, *policyFile)
	if err != nil {
		return err
	}
	values, err := parseAttrs(p, attrs)
	if err != nil {
		return err
	}
	in := intentWire{ID: *id, PolicyID: p.ID()}
	if len(values) > 0 {
		in.Attrs = &values
	}
	intent, err := json.Marshal(in)
	if err != nil {
		return err
	}
	auth, err := c.sign(intent, signers, len(by.multisig) > 0, *by.threshold)
	if err != nil {
		return err
	}

	if *dryRun {
		body, err := client.AuthoredIntentJSON(intent, auth)
		if err != nil {
			return err
		}
		return c.printJSON(json.RawMessage(body))
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	if err := api.SubmitIntent(ctx, intent, auth); err != nil {
		return c.reach(err)
	}
	return c.printID(*id)
}

// intentPolicy is the policy an intent names: compiled from --policy-file, or read
// from the server and compiled here, so that the attribute types are the policy's.
func (c *cli) intentPolicy(id, file string) (*policy.Policy, error) {
	if id == "" && file == "" {
		return nil, usagef("--policy ID is required (or --policy-file FILE)")
	}
	var src string
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usagef("--policy-file: %v", err)
		}
		src = string(b)
	} else {
		api, err := c.api()
		if err != nil {
			return nil, err
		}
		ctx, cancel := c.call()
		defer cancel()
		if src, err = api.Policy(ctx, id); err != nil {
			return nil, c.reach(err)
		}
	}
	p, err := policy.Compile(src)
	if err != nil {
		return nil, &exitError{exitRefused, fmt.Errorf("the policy does not compile here: %v", err)}
	}
	if id != "" && p.ID() != id {
		where := "the server's text of it"
		if file != "" {
			where = file
		}
		return nil, &exitError{exitRefused, fmt.Errorf("%s compiles to policy %s, not %s", where, p.ID(), id)}
	}
	return p, nil
}

// parseAttrs reads NAME=VALUE pairs with the types the policy declares: an int, a
// string as written, true or false, or a comma-separated set (empty for the empty set).
func parseAttrs(p *policy.Policy, pairs []string) (policy.Attrs, error) {
	params := p.Parameters()
	names := make([]string, len(params))
	for i, prm := range params {
		names[i] = prm.Name + " " + prm.Type.String()
		if prm.Optional {
			names[i] = prm.Name + " optional " + prm.Type.String()
		}
	}
	attrs := policy.Attrs{}
	for _, pair := range pairs {
		name, text, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, usagef("--attr %q: want NAME=VALUE", pair)
		}
		i := slices.IndexFunc(params, func(prm policy.Param) bool { return prm.Name == name })
		if i < 0 {
			return nil, usagef("--attr %s: policy %s has no such parameter (it has: %s)", name, p.Name(), strings.Join(names, ", "))
		}
		if _, dup := attrs[name]; dup {
			return nil, usagef("--attr %s is given twice", name)
		}
		v, err := parseValue(params[i].Type, text)
		if err != nil {
			return nil, usagef("--attr %s=%s: %v", name, text, err)
		}
		attrs[name] = v
	}
	if err := p.CheckAttrs(attrs); err != nil {
		return nil, usagef("attributes: %v (policy %s parameters: %s)", err, p.Name(), strings.Join(names, ", "))
	}
	return attrs, nil
}

func parseValue(t policy.Type, text string) (policy.Value, error) {
	switch t {
	case policy.TypeInt:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return policy.Value{}, fmt.Errorf("want an int")
		}
		return policy.IntValue(n), nil
	case policy.TypeString:
		return policy.StringValue(text), nil
	case policy.TypeBool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return policy.Value{}, fmt.Errorf("want true or false")
		}
		return policy.BoolValue(b), nil
	case policy.TypeStringSet:
		return policy.StringSetValue(splitSet(text)...), nil
	case policy.TypeIntSet:
		var ns []int64
		for _, s := range splitSet(text) {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return policy.Value{}, fmt.Errorf("element %q: want an int (a set<int> is comma-separated ints)", s)
			}
			ns = append(ns, n)
		}
		return policy.IntSetValue(ns...), nil
	}
	return policy.Value{}, fmt.Errorf("the policy's type %s cannot be given on the command line", t)
}

func splitSet(text string) []string {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	parts := strings.Split(text, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// sign makes the authorship of intent: the one signer's signature, or a multisig of
// all of them needing threshold (every signer's weight when 0); none is unsigned. The
// public key of a lone signer is told on stderr, so that a user sees which key signed
// while stdout stays the id alone for scripts.
func (c *cli) sign(intent []byte, signers []signer, multi bool, threshold uint64) (crypto.Authorship, error) {
	var auth crypto.Authorship
	if !multi {
		for _, s := range signers {
			sig, err := s.sign(intent)
			if err != nil {
				return auth, err
			}
			auth.Signature = sig
			fmt.Fprintf(c.stderr, "signed with public key %s\n", crypto.EncodeBase58(s.publicKey()))
		}
		return auth, nil
	}
	m := &crypto.MultisigSignature{Threshold: threshold}
	if m.Threshold == 0 {
		m.Threshold = uint64(len(signers))
	}
	for _, s := range signers {
		sig, err := s.sign(intent)
		if err != nil {
			return auth, err
		}
		m.Signers = append(m.Signers, crypto.Signer{PubKey: s.publicKey(), Weight: 1})
		m.Signatures = append(m.Signatures, *sig)
	}
	auth.Signature = &crypto.Signature{Multisig: m}
	return auth, nil
}

// signFlags are the flags of a command that signs as a person: an intent, a mandate,
// a revocation.
type signFlags struct {
	key, passkey *string
	multisig     listFlag
	threshold    *uint64
	unsigned     *bool
}

func addSignFlags(fs *flag.FlagSet) *signFlags {
	f := &signFlags{
		key:       fs.String("key", "", "sign with this Ed25519 key file"),
		passkey:   fs.String("passkey", "", "sign with this software passkey file"),
		threshold: fs.Uint64("threshold", 0, "with --multisig: the weight needed (default: every signer)"),
		unsigned:  fs.Bool("unsigned", false, "submit without a signature (only where the server permits it)"),
	}
	fs.Var(&f.multisig, "multisig", "sign with this key file as one signer of a multisig (repeat; weight 1 each)")
	return f
}

// load reads the signers' key files: none for --unsigned.
func (f *signFlags) load() ([]signer, error) {
	modes := 0
	for _, set := range []bool{*f.key != "", *f.passkey != "", len(f.multisig) > 0, *f.unsigned} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return nil, usagef("want exactly one of --key, --passkey, --multisig or --unsigned")
	}
	if *f.threshold > 0 && len(f.multisig) == 0 {
		return nil, usagef("--threshold goes with --multisig")
	}
	var signers []signer
	switch {
	case *f.key != "" || *f.passkey != "":
		file, kind := *f.key, "ed25519"
		if *f.passkey != "" {
			file, kind = *f.passkey, "passkey"
		}
		s, err := loadSigner(file, kind)
		if err != nil {
			return nil, &exitError{exitRefused, err}
		}
		signers = append(signers, s)
	case len(f.multisig) > 0:
		if *f.threshold > uint64(len(f.multisig)) {
			return nil, usagef("--threshold %d: more than the %d signer(s), so no signature could ever verify", *f.threshold, len(f.multisig))
		}
		for _, file := range f.multisig {
			s, err := loadSigner(file, "")
			if err != nil {
				return nil, &exitError{exitRefused, err}
			}
			signers = append(signers, s)
		}
	}
	return signers, nil
}

// idOrFresh is the id the flag named gave, checked to be a UUID, or a fresh random one
// when it gave none.
func idOrFresh(id, flag string) (string, error) {
	if id == "" {
		return uuid.NewString(), nil
	}
	if _, ok := intentd.CanonicalIntentID(id); !ok {
		return "", usagef("--%s %q: want a UUID (36 characters, hyphenated)", flag, id)
	}
	return id, nil
}
