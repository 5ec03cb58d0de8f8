package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/internal/buildinfo"
	"github.com/intentd/intentd/internal/secretfile"
)

// The exit codes, as doc.go lists them.
const (
	exitOK          = 0
	exitRefused     = 1
	exitUsage       = 2
	exitUnreachable = 3
	exitVerify      = 4
	exitNotAllWon   = 5
)

const defaultServer = "http://127.0.0.1:8080"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program on the given arguments and outputs; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// lookupEnv reads the environment; tests replace it.
var lookupEnv = os.LookupEnv

// globals are the flags every command accepts, before or after its name.
type globals struct {
	server string
	// token and tokenFile are --token (the token, or @FILE) and --token-file as given
	// on the command line; cli.bearer reads the token from them or the environment.
	token     string
	tokenFile string
	timeout   time.Duration
	json      bool
	// ca, cert and certKey are the TLS files of an https:// server: the CA bundle to
	// trust, and a client certificate and its key.
	ca, cert, certKey string
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.server, "server", g.server, "base URL of the intentd server (env INTENTCTL_SERVER)")
	fs.StringVar(&g.token, "token", g.token, "bearer token sent with every request, or @FILE to read it from FILE (env INTENTCTL_TOKEN); prefer --token-file, since a command line is shown to every user of the host")
	fs.StringVar(&g.tokenFile, "token-file", g.tokenFile, "file holding the bearer token on one line, mode 0600 or 0400 (env INTENTCTL_TOKEN_FILE)")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "time limit of each request (not of watch's stream)")
	fs.BoolVar(&g.json, "json", g.json, "print JSON instead of text")
	fs.StringVar(&g.ca, "ca", g.ca, "PEM file of the CAs to trust for an https:// server, in place of the system's (env INTENTCTL_CA)")
	fs.StringVar(&g.cert, "cert", g.cert, "PEM file of a client certificate to present to an https:// server that takes them, with --cert-key (env INTENTCTL_CERT)")
	fs.StringVar(&g.certKey, "cert-key", g.certKey, "PEM file of the key of --cert, mode 0600 or 0400 (env INTENTCTL_CERT_KEY)")
}

// cli is one run: its outputs, flags and, once needed, its client.
type cli struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	g      globals
	// envToken and envTokenFile are INTENTCTL_TOKEN and INTENTCTL_TOKEN_FILE, kept
	// apart from the flags so that a command line giving either form wins over both,
	// and so that a command's -h never shows the token as a default.
	envToken, envTokenFile string
	cmd                    command
	client                 *client.Client
}

// usageError is a mistake on the command line: exit 2, with the command's usage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitError carries an exit code chosen where the failure is understood best.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

type command struct {
	name, args, help string
	run              func(c *cli, args []string) error
}

var commands []command

// subcommands are the usage lines and help of the commands that have several, so that
// "intentctl policy push -h" speaks of push alone.
var subcommands = map[string]command{
	"policy push":   {name: "policy push", args: "FILE", help: "compile FILE (- reads standard input) on the server and store it; print its id"},
	"policy get":    {name: "policy get", args: "ID", help: "print the stored policy, pretty-printed"},
	"policy delete": {name: "policy delete", args: "ID", help: "delete a policy that no open or processing intent names"},
	"policy check":  {name: "policy check", args: "FILE [--solver cvc5|z3|PATH]", help: "compile FILE (- reads standard input) here, storing nothing: print its id, or its errors with a caret under each; then its analysis with an SMT solver: whether anything passes it, and each constraint that never holds, always holds, is implied by others or never decides anything, with an example (exit 0 whatever it finds)"},
	"policy diff":   {name: "policy diff", args: "OLD NEW [--solver cvc5|z3|PATH]", help: "compare two versions of a policy with an SMT solver: whether they accept the same intents and evidence, and an example of what each accepts that the other refuses (exit 0 whatever it finds)"},
	"log watch": {name: "log watch", args: "[--state FILE] [--key BASE58] [--interval D] [--grace D] [--once]",
		help: "follow the transparency log's checkpoints, check each is consistent with the last one seen (kept in the state file), and report a fork with exit 4"},
	"agent keygen": {name: "agent keygen", args: "[-o FILE]", help: "make an agent's Ed25519 key pair: FILE (default intentctl-agent.key) signs proposals with --agent-key, FILE.pub goes in the intent's agents parameter"},
	"agent sign": {name: "agent sign", args: "URL BODY --agent-key FILE [--agent-tag TAG] [--window D]",
		help: "print the headers of the agent's RFC 9421 signature of a POST of BODY (the text, or @FILE) to URL, one per line, for curl -H @FILE"},
	"log get": {name: "log get", args: "N [--key BASE58]", help: "print leaf N of the transparency log, its inclusion in the newest checkpoint checked"},
	"mandate create": {name: "mandate create", args: "--policy ID [--attr NAME=VALUE ...] [--expires 720h|TIME] [--key FILE | --passkey FILE | --multisig FILE ... | --unsigned]",
		help: "build, sign and store a mandate: one authorization for many purchases under the policy and its attrs, until it expires; print its id"},
	"mandate status": {name: "mandate status", args: "ID", help: "show a mandate's state, its totals (overall and in the policy's period) and the purchases it took"},
	"mandate purchase": {name: "mandate purchase", args: "ID SOLUTION [--intent-id UUID] [--agent-key FILE [--agent-tag TAG]]",
		help: "purchase SOLUTION under the mandate: an intent of its policy and attrs, and its proposal, in one request; print the intent's id"},
	"mandate revoke": {name: "mandate revoke", args: "ID [--key FILE | --passkey FILE | --multisig FILE ... | --unsigned]",
		help: "revoke a mandate, signed by its author: it takes no purchase after; those taken before end as decided"},
	"webhook create": {name: "webhook create", args: "URL [--type T]... [--policy ID]... [--mandate ID]... [--asymmetric] [--max-in-flight N]",
		help: "register a webhook endpoint the service delivers outcomes to (admin role); print it as JSON with its secret, which is shown this once"},
	"webhook list":    {name: "webhook list", args: "", help: "list the webhook endpoints with their health and last attempt, and the key v1a signatures verify with"},
	"webhook show":    {name: "webhook show", args: "ID", help: "show a webhook endpoint: its health, its filters and its recent attempts"},
	"webhook delete":  {name: "webhook delete", args: "ID", help: "delete a webhook endpoint: its deliveries stop"},
	"webhook enable":  {name: "webhook enable", args: "ID", help: "enable a webhook endpoint again: it starts on the event it was at, its retry schedule from the start"},
	"webhook disable": {name: "webhook disable", args: "ID", help: "disable a webhook endpoint: its deliveries stop, keeping their place, until it is enabled"},
	"webhook redeliver": {name: "webhook redeliver", args: "ID --from EVENT_ID",
		help: "deliver the events from EVENT_ID on again to a webhook endpoint, in order"},
	"webhook send": {name: "webhook send", args: "ID EVENT_ID",
		help: "send one event to a webhook endpoint now, outside its order, and print the attempt; exit 1 when the receiver did not take it"},
}

// enter makes a subcommand the one whose usage and help are shown, when sub names one.
func (c *cli) enter(sub string) {
	if s, ok := subcommands[c.cmd.name+" "+sub]; ok {
		c.cmd = s
	}
}

func init() {
	commands = []command{
		{"keygen", "[-o FILE] [--passkey [--rp-id ID] [--origin URL]]", "make a key pair: Ed25519, or a software P-256 passkey", (*cli).keygen},
		{"info", "", "show the server's version, settings and receipt key", (*cli).info},
		{"policy", "push FILE | get ID | delete ID | check FILE | test DIR | diff OLD NEW", "store, read, delete, or here check, test or compare policies", (*cli).policy},
		{"intent", "new --policy ID [--attr NAME=VALUE ...] [--key FILE | --passkey FILE | --multisig FILE ... | --unsigned]", "build, sign and submit an intent", (*cli).intent},
		{"preview", "ID SOLUTION", "what a proposal of SOLUTION would decide, spending nothing", (*cli).preview},
		{"propose", "ID SOLUTION [--agent-key FILE [--agent-tag TAG]]", "propose a solution for an open intent; signed as the agent of FILE", (*cli).propose},
		{"status", "ID", "show an intent's status, and what its evidence must satisfy while it is open", (*cli).status},
		{"get", "ID", "print an intent as stored, with its authorship", (*cli).get},
		{"proof", "ID [-o FILE]", "fetch the proof bundle of a decided intent", (*cli).proof},
		{"verify", "FILE [--key BASE58] [--log-policy FILE]", "check a proof bundle offline", (*cli).verify},
		{"watch", "[--intent ID ...] [--from N] [--until-terminal]", "follow the outcome stream", (*cli).watch},
		{"log", "watch [--state FILE] [--key BASE58] [--interval D] [--once] [--log-policy FILE] | get N", "follow the transparency log's checkpoints and report a fork; print a leaf", (*cli).logCmd},
		{"certs", "[-o DIR] [--days N] [--renew] NAME=HOST[,HOST...] ...", "write a cluster CA and each member's certificate and key, for --cluster-tls-*", (*cli).certs},
		{"mcp", "[--agent-key FILE [--agent-tag TAG]]", "serve the agent tools (MCP) on stdin and stdout, over this server; proposals signed as the agent of FILE", (*cli).mcp},
		{"agent", "keygen [-o FILE] | sign URL BODY", "make an agent's key pair, to sign proposals with; sign a request by hand", (*cli).agent},
		{"mandate", "create | status ID | purchase ID SOLUTION | revoke ID", "make a standing authorization for many purchases under a budget, read it, purchase under it, revoke it", (*cli).mandate},
		{"webhook", "create URL | list | show ID | delete ID | enable ID | disable ID | redeliver ID --from N | send ID EVENT_ID", "register the endpoints outcomes are pushed to, read their health, disable, enable, redeliver (admin role)", (*cli).webhook},
		{"backup", "-o FILE", "save an online backup of the server's store in FILE, checked whole (admin role); intentd restore brings it back", (*cli).backup},
		{"demo", "[--wait D]", "push the demo policy, run one intent that succeeds and one that fails, verify both proofs", (*cli).demo},
	}
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: intentctl [--server URL] [--token-file FILE | --token T] [--ca FILE] [--cert FILE --cert-key FILE] [--timeout D] [--json] COMMAND [ARGS]\n       intentctl --version\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n           %s\n", c.name, c.args, c.help)
	}
	fmt.Fprintf(w, `
The server is %s unless --server or INTENTCTL_SERVER (or INTENTD_SERVER) says otherwise.
"intentctl COMMAND -h" lists a command's flags. To see it all work: intentctl demo.
Walk-through: docs/cli.md.

Exit codes: 0 done; 1 refused (by the server, or by a local check; demo: not as expected;
policy test: a case failed or a coverage is below --threshold); 2 usage;
3 server unreachable; 4 verification failed (log watch: a fork); 5 watch --until-terminal: not all succeeded.
`, defaultServer)
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{ctx: ctx, stdout: stdout, stderr: stderr}
	c.g = globals{server: defaultServer, timeout: 30 * time.Second}
	for _, name := range []string{"INTENTD_SERVER", "INTENTCTL_SERVER"} { // the latter wins
		if v, ok := lookupEnv(name); ok && v != "" {
			c.g.server = v
		}
	}
	c.g.ca, _ = lookupEnv("INTENTCTL_CA")
	c.g.cert, _ = lookupEnv("INTENTCTL_CERT")
	c.g.certKey, _ = lookupEnv("INTENTCTL_CERT_KEY")
	c.envToken, _ = lookupEnv("INTENTCTL_TOKEN")
	c.envTokenFile, _ = lookupEnv("INTENTCTL_TOKEN_FILE")

	fs := flag.NewFlagSet("intentctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.g.register(fs)
	showVersion := fs.Bool("version", false, "print the version and the revision intentctl was built from")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "intentctl: %v\n\n", err)
		printUsage(stderr)
		return exitUsage
	}
	if *showVersion {
		fmt.Fprintln(stdout, "intentctl", buildinfo.Read())
		return exitOK
	}
	if fs.NArg() == 0 {
		printUsage(stderr)
		return exitUsage
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if name == "help" {
		printUsage(stdout)
		return exitOK
	}
	for _, cmd := range commands {
		if cmd.name == name {
			c.cmd = cmd
			return c.finish(cmd, cmd.run(c, rest))
		}
	}
	fmt.Fprintf(stderr, "intentctl: unknown command %q\n\n", name)
	printUsage(stderr)
	return exitUsage
}

// finish reports a command's error and picks the exit code.
func (c *cli) finish(cmd command, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	code := exitCode(err)
	if errorsNameSubcommand[cmd.name] && strings.HasPrefix(c.cmd.name, cmd.name+" ") {
		cmd = c.cmd
	}
	fmt.Fprintf(c.stderr, "intentctl %s: %v\n", cmd.name, err)
	if code == exitUsage {
		fmt.Fprintf(c.stderr, "usage: intentctl %s %s\n", cmd.name, cmd.args)
	}
	return code
}

// errorsNameSubcommand are the commands whose errors and usage lines name the
// subcommand that failed ("intentctl webhook send: ..."), since their subcommands each
// call another route. The older commands keep naming the command alone, which scripts
// and documents match.
var errorsNameSubcommand = map[string]bool{"webhook": true}

func exitCode(err error) int {
	var ee *exitError
	var ue *usageError
	var ae *client.APIError
	var oe *net.OpError
	var ue2 *url.Error
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ae):
		return exitRefused
	case errors.As(err, &ue2), errors.As(err, &oe), errors.Is(err, context.DeadlineExceeded):
		return exitUnreachable
	}
	return exitRefused
}

// flags makes a command's flag set, with the global flags on it too.
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("intentctl "+name, flag.ContinueOnError)
	// The errors are reported once, by finish, with the command's usage line.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	c.g.register(fs)
	return fs
}

// parse reads flags anywhere among the arguments (the standard package stops at the
// first argument that is not a flag) and returns the others in order; "--" ends the
// flags.
func (c *cli) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(c.stdout, "Usage: intentctl %s %s\n\n%s.\n\nFlags:\n", c.cmd.name, c.cmd.args, c.cmd.help)
				fs.SetOutput(c.stdout)
				fs.PrintDefaults()
				return nil, err
			}
			return nil, &usageError{err.Error()}
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return pos, nil
}

// want checks the number of positional arguments.
func want(pos []string, n int, names string) error {
	if len(pos) != n {
		return usagef("want %s, got %d argument(s)", names, len(pos))
	}
	return nil
}

// begin is the start of every command that talks to the server: its flags, exactly n
// positional arguments (named for the usage message), and the client.
func (c *cli) begin(fs *flag.FlagSet, args []string, n int, names string) ([]string, *client.Client, error) {
	pos, err := c.parse(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if err := want(pos, n, names); err != nil {
		return nil, nil, err
	}
	api, err := c.api()
	if err != nil {
		return nil, nil, err
	}
	return pos, api, nil
}

// api returns the client of the server the flags name, sending the token they give.
func (c *cli) api() (*client.Client, error) {
	if c.client != nil {
		return c.client, nil
	}
	cl, err := client.NewClient(c.g.server)
	if err != nil {
		return nil, usagef("--server: %v", err)
	}
	if cl.Token, err = c.bearer(); err != nil {
		return nil, err
	}
	if cl.TLSConfig, err = c.tlsConfig(cl); err != nil {
		return nil, err
	}
	cl.UserAgent = "intentctl"
	c.client = cl
	return cl, nil
}

// bearer is the token sent with every request: from --token, its @FILE or --token-file
// when the command line gives one of them, else from INTENTCTL_TOKEN (or its @FILE) or
// INTENTCTL_TOKEN_FILE. Both forms at once is a usage error; a token file that cannot
// be used is refused, as a key file is.
func (c *cli) bearer() (string, error) {
	token, file := c.g.token, c.g.tokenFile
	if token == "" && file == "" {
		token, file = c.envToken, c.envTokenFile
	}
	if token != "" && file != "" {
		return "", usagef("--token and --token-file (or INTENTCTL_TOKEN and INTENTCTL_TOKEN_FILE): give one of them")
	}
	return secretfile.Resolve("token", token, file)
}

// tlsConfig is the TLS configuration that --ca, --cert and --cert-key give, or nil
// when none is given. They are for an https:// server: given for an http:// one, they
// are a usage error rather than ignored, since a caller who names a CA means the
// connection to be checked.
func (c *cli) tlsConfig(cl *client.Client) (*tls.Config, error) {
	g := c.g
	if g.ca == "" && g.cert == "" && g.certKey == "" {
		return nil, nil
	}
	if !strings.HasPrefix(cl.BaseURL(), "https://") {
		return nil, usagef("--ca, --cert and --cert-key are for an https:// server, and --server is %s", cl.BaseURL())
	}
	if (g.cert == "") != (g.certKey == "") {
		return nil, usagef("--cert and --cert-key go together: give both, or neither")
	}
	tc, err := client.NewTLSConfig(g.ca, g.cert, g.certKey)
	if err != nil {
		return nil, fmt.Errorf("TLS files: %w", err)
	}
	return tc, nil
}

// call is the context of one request: the run's, within --timeout.
func (c *cli) call() (context.Context, context.CancelFunc) {
	if c.g.timeout <= 0 {
		return context.WithCancel(c.ctx)
	}
	return context.WithTimeout(c.ctx, c.g.timeout)
}

// reach wraps a failure to talk to the server so that it says which server.
func (c *cli) reach(err error) error {
	var ae *client.APIError
	if err == nil || errors.As(err, &ae) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &exitError{exitUnreachable, fmt.Errorf("no answer from %s within %s", c.g.server, c.g.timeout)}
	}
	// The transport's errors are *url.Error; syscall errors also satisfy net.Error,
	// so that interface would take a local file's failure for the network's.
	var ue *url.Error
	var oe *net.OpError
	if errors.As(err, &ue) || errors.As(err, &oe) {
		return &exitError{exitUnreachable, fmt.Errorf("cannot reach %s: %v", c.g.server, err)}
	}
	return err
}

// printJSON writes v indented, for --json and for documents.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// isTerminal reports whether w is a terminal, for the waiting indicator.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
