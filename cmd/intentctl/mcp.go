package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/mcpserver"
)

// stdin is what mcp reads; tests replace it.
var stdin io.Reader = os.Stdin

// mcp serves the agent tools (docs/agents.md) over stdio, for desktop agents that
// start a command rather than reach a URL: each tool call becomes requests to the
// server, with this command's --server and --token, as every other command sends
// them. Logs go to stderr, which such hosts show; stdout carries only the protocol.
func (c *cli) mcp(args []string) error {
	fs := c.flags("mcp")
	agent := addAgentKeyFlags(fs)
	_, api, err := c.begin(fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	if err := agent.apply(c); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := mcpserver.New(mcpserver.Remote(api), mcpserver.Options{Version: "intentctl", Logger: log})
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{c.stdout}}
	if err := srv.MCP().Run(c.ctx, t); err != nil && !errors.Is(err, io.EOF) && c.ctx.Err() == nil {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// preview asks what a proposal of SOLUTION would decide, spending nothing.
func (c *cli) preview(args []string) error {
	pos, api, err := c.begin(c.flags("preview"), args, 2, "ID SOLUTION")
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	pv, err := api.Preview(ctx, pos[0], pos[1])
	if err != nil {
		var ae *client.APIError
		if errors.As(err, &ae) && ae.RetryAfter > 0 {
			return fmt.Errorf("%w (nothing changed; try again in %s)", err, ae.RetryAfter)
		}
		return c.reach(err)
	}
	if c.g.json {
		return c.printJSON(pv)
	}
	o := pv.Outcome
	fmt.Fprintf(c.stdout, "preview of %s for %s: it would be %s", pos[1], pos[0], o.State)
	if o.FailureKind != "" {
		fmt.Fprintf(c.stdout, " (%s)", o.FailureKind)
	}
	fmt.Fprintln(c.stdout)
	for _, f := range o.Failures {
		fmt.Fprintf(c.stdout, "  failed constraint %d: %s\n    reason: %s\n", f.Index, f.PrettyExpr, f.Reason)
	}
	if o.State != "success" && len(o.Failures) == 0 && o.Reason != "" {
		fmt.Fprintf(c.stdout, "  reason: %s\n", o.Reason)
	}
	if pv.PreviewsLeft != nil {
		fmt.Fprintf(c.stdout, "  previews left for this intent: %d\n", *pv.PreviewsLeft)
	}
	fmt.Fprintf(c.stdout, "  %s\n", pv.Note)
	return nil
}
