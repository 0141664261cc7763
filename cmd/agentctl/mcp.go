package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/console"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/mcpserver"
	"github.com/agentd-dev/agentd/runner/session"
)

// mcpTokenEnv holds the bearer token of --http when set; without it a
// token is generated and printed once.
const mcpTokenEnv = "AGENTD_MCP_TOKEN"

func runMCP(ctx context.Context, args []string) error {
	fs := flagSet("mcp", `usage: agentctl mcp --guest ADDR|NAME|docker [--token-file F] [--tools computer,browser,code] [--allow-origin O ...] [--view WxH] [--confirm] [--console] [--record-dir D] [--http 127.0.0.1:PORT]

Serves the guest's desktop to a Model Context Protocol client: over standard
input and output (the client starts this command), or with --http over
Streamable HTTP on a loopback address, with a bearer token. Each MCP session
is one controller of the guest (a second one is refused as busy);
--guest docker gives each session a fresh container (from a pool when one
runs), taken down when the session ends. The browser's calls that change a
page are asked of a person (elicitation, the console, the terminal) whether or
not --confirm is given; nobody to ask = refused.`)
	var g guestFlags
	g.register(fs)
	tools := fs.String("tools", "computer", "toolsets offered, comma-separated: computer, browser (the guest's Chromium, agentd --browser; needs --allow-origin), code (exec_py; agentd --code)")
	var origins session.Origins
	fs.Var(&origins, "allow-origin", "with --tools browser: an origin the browser may load from (scheme://host[:port]; repeat for more); every other load is refused")
	viewSize := fs.String("view", "1280x800", "the client sees the screen fitted within WxH (aspect kept); coordinates are mapped back")
	confirm := fs.Bool("confirm", false, "ask before each action and final screenshot (and each exec_py): through MCP elicitation when the client supports it, else the console (--console) and, with --http, the terminal; nobody to ask = refused")
	withConsole := fs.Bool("console", false, "serve the console (the desktop live, take over, each session's record, approvals) and print its one-time URL on standard error")
	recordDir := fs.String("record-dir", "runs", "folder under which each MCP session writes its run record (empty: none)")
	httpAddr := fs.String("http", "", "serve Streamable HTTP on this loopback address (127.0.0.1:PORT) instead of stdio; bearer token from $"+mcpTokenEnv+" or generated and printed")
	network := fs.Bool("network", false, "with --guest docker: give each session's container a network (default none)")
	idle := fs.Duration("idle", 30*time.Minute, "with --http: end a session (and release its guest) after this long without a request")
	backend.RegisterFlags(fs) // a backend's own settings: kubernetes' --namespace, ...
	if err := fs.Parse(args); err != nil {
		return err
	}
	toolList := strings.Split(*tools, ",")
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case g.addr == "":
		return errors.New("--guest is required (or $AGENTD_ADDR)")
	case *idle <= 0:
		return errors.New("--idle must be positive")
	}
	view, err := parseView(*viewSize, "", true)
	if err != nil {
		return err
	}
	fresh, err := backend.Get(g.addr)
	if err != nil && *network {
		return errors.New("--network is for --guest docker")
	}
	var open func(context.Context) (*mcpserver.Desktop, error)
	var live *console.Guest
	if fresh != nil {
		spec := backend.Spec{Network: *network, Code: slices.Contains(toolList, mcpserver.ToolsCode), Browser: slices.Contains(toolList, mcpserver.ToolsBrowser)}
		open = func(ctx context.Context) (*mcpserver.Desktop, error) {
			return mcpserver.FreshDesktop(ctx, fresh, spec, os.Stderr)
		}
	} else {
		if err := g.resolve(ctx); err != nil {
			return err
		}
		token, err := g.token()
		if err != nil {
			return err
		}
		addr, opts := g.addr, g.options()
		live = &console.Guest{Addr: addr, Token: token, Dial: opts.Dial}
		open = func(ctx context.Context) (*mcpserver.Desktop, error) {
			c, err := guest.DialWith(ctx, addr, token, opts)
			if err != nil {
				return nil, err
			}
			return &mcpserver.Desktop{Client: c, Addr: addr, Close: func() { c.Close() }}, nil
		}
	}
	cfg := mcpserver.Config{Open: open, View: view, Tools: toolList, Origins: origins, Confirm: *confirm, RecordDir: *recordDir, Log: os.Stderr}
	// Standard input is the protocol over stdio; the terminal answers only
	// with --http.
	interactive := *httpAddr != "" && runner.IsTerminal(os.Stdin)
	var term *runner.TerminalApprover
	if interactive {
		term = runner.NewTerminalApprover(os.Stdin, os.Stderr)
		cfg.Approve = term.ApproveAction
		cfg.Ask = func(ctx context.Context, q mcpserver.Question) (bool, error) {
			return term.Ask(ctx, "\n"+q.Text+"\nApprove? [y/N] ")
		}
	}
	if *withConsole {
		if *recordDir == "" {
			return errors.New("--console shows the sessions' records: give a --record-dir")
		}
		srv, err := console.Start(console.Config{RunsDir: *recordDir, Guest: live})
		if err != nil {
			return err
		}
		defer srv.Close()
		printConsoleURL(os.Stderr, srv)
		ap := console.Approvals{Server: srv}
		if term != nil {
			ap.Terminal = term
		}
		cfg.Approve = ap.BeforeAction
		cfg.Ask = func(ctx context.Context, q mcpserver.Question) (bool, error) {
			var ask func(context.Context) (bool, error)
			if term != nil {
				ask = func(ctx context.Context) (bool, error) { return term.Ask(ctx, "\n"+q.Text+"\nApprove? [y/N] ") }
			}
			return ap.Question(ctx, console.Question{Kind: q.Kind, CallID: q.CallID, Index: -1, Summary: q.Summary, Detail: q.Text}, ask)
		}
	}
	srv, err := mcpserver.New(cfg)
	if err != nil {
		return err
	}
	if *httpAddr == "" {
		return srv.ServeStdio(ctx)
	}
	return srv.ListenAndServe(ctx, *httpAddr, *idle, strings.TrimSpace(os.Getenv(mcpTokenEnv)), mcpTokenEnv, os.Stderr)
}
