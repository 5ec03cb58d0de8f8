package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestSubcommandHelp asks each command with subcommands for the help of each: it is that
// subcommand's usage line and flags, with exit 0, and needs no server. The commands
// that sign as an agent show their agent flags, and help lists agent among the
// commands.
func TestSubcommandHelp(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	tests := []struct {
		args []string
		want []string // in the output, in this order
	}{
		{[]string{"policy", "push", "-h"}, []string{"Usage: intentctl policy push FILE\n", "store it"}},
		{[]string{"policy", "get", "-h"}, []string{"Usage: intentctl policy get ID\n", "pretty-printed"}},
		{[]string{"policy", "delete", "--help"}, []string{"Usage: intentctl policy delete ID\n"}},
		{[]string{"policy", "check", "-h"}, []string{"Usage: intentctl policy check FILE [--solver cvc5|z3|PATH]\n", "storing nothing", "-solver"}},
		{[]string{"policy", "-h"}, []string{"Usage: intentctl policy push FILE | get ID"}},
		{[]string{"log", "watch", "-h"}, []string{"Usage: intentctl log watch [--state FILE] [--key BASE58] [--interval D]", "-interval duration", "-key string"}},
		{[]string{"log", "get", "-h"}, []string{"Usage: intentctl log get N [--key BASE58]\n", "-key string"}},
		{[]string{"log", "-h"}, []string{"Usage: intentctl log watch", "list their flags"}},
		{[]string{"intent", "-h"}, []string{"Usage: intentctl intent new"}},
		{[]string{"agent", "keygen", "-h"}, []string{"Usage: intentctl agent keygen [-o FILE]\n", "FILE.pub goes in the intent's agents parameter", "-o string", "intentctl-agent.key"}},
		{[]string{"agent", "-h"}, []string{"Usage: intentctl agent keygen [-o FILE] | sign URL BODY\n", "to sign proposals with"}},
		{[]string{"agent", "sign", "-h"}, []string{"Usage: intentctl agent sign URL BODY --agent-key FILE", "curl -H @FILE", "-agent-key string", "-window duration"}},
		{[]string{"mandate", "create", "-h"}, []string{"Usage: intentctl mandate create --policy ID", "-expires string", "-key string"}},
		{[]string{"mandate", "purchase", "-h"}, []string{"Usage: intentctl mandate purchase ID SOLUTION", "-agent-key string", "-intent-id string"}},
		{[]string{"webhook", "create", "-h"}, []string{"Usage: intentctl webhook create URL [--type T]... [--policy ID]... [--mandate ID]... [--asymmetric] [--max-in-flight N]\n", "shown this once", "-asymmetric", "-mandate value", "-max-in-flight int", "-policy value", "-type value"}},
		{[]string{"webhook", "redeliver", "-h"}, []string{"Usage: intentctl webhook redeliver ID --from EVENT_ID\n", "in order", "-from string"}},
		{[]string{"webhook", "send", "-h"}, []string{"Usage: intentctl webhook send ID EVENT_ID\n", "exit 1 when the receiver did not take it"}},
		{[]string{"webhook", "-h"}, []string{"Usage: intentctl webhook create URL | list | show ID", "(admin role)"}},
		{[]string{"propose", "-h"}, []string{"Usage: intentctl propose ID SOLUTION [--agent-key FILE [--agent-tag TAG]]\n", "-agent-key string", "intentctl agent keygen", "-agent-tag string"}},
		{[]string{"mcp", "-h"}, []string{"Usage: intentctl mcp [--agent-key FILE [--agent-tag TAG]]\n", "-agent-key string", "-agent-tag string"}},
		{[]string{"--version"}, []string{"intentctl ", runtime.Version() + ")\n"}},
		{[]string{"help"}, []string{"  propose  ID SOLUTION [--agent-key FILE [--agent-tag TAG]]\n", "  mcp      [--agent-key FILE", "  agent    keygen [-o FILE] | sign URL BODY\n", "to sign proposals with"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runCLI(t, "http://127.0.0.1:1", tt.args...)
			if r.code != exitOK {
				t.Fatalf("exit %d, want 0; stderr %q", r.code, r.stderr)
			}
			wantInOrder(t, r.stdout, tt.want)
		})
	}
}
