package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentd-dev/agentd/console"
	"github.com/agentd-dev/agentd/runner"
)

func runConsole(ctx context.Context, args []string) error {
	fs := flagSet("console", `usage: agentctl console [--guest ADDR|NAME] [--record-dir D] [--evals D] [--listen 127.0.0.1:PORT]

Serves the console on this machine: the guest's desktop live (view only),
every run under --record-dir step by step, and the evaluations under
--evals (each a table of tasks × trials linking to the trials' runs). Open the printed URL once:
it carries a one-time secret that your browser exchanges for a cookie.`)
	var g guestFlags
	g.register(fs)
	runs := fs.String("record-dir", "runs", "folder holding the run records (as agentctl run writes them)")
	evals := fs.String("evals", ".", "folder holding evaluations (agentctl eval's output folders), shown as tables of tasks × trials")
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to serve the page on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := console.Config{Listen: *listen, RunsDir: *runs, EvalsDir: *evals}
	if g.addr != "" {
		gs, err := consoleGuest(ctx, &g)
		if err != nil {
			return err
		}
		cfg.Guest = gs
	}
	srv, err := console.Start(cfg)
	if err != nil {
		return err
	}
	printConsoleURL(os.Stdout, srv)
	<-ctx.Done()
	return srv.Close()
}

// consoleGuest resolves the guest the console watches.
func consoleGuest(ctx context.Context, g *guestFlags) (*console.Guest, error) {
	if err := g.resolve(ctx); err != nil {
		return nil, err
	}
	tok, err := g.token()
	if err != nil {
		return nil, err
	}
	return &console.Guest{Addr: g.addr, Token: tok, Dial: g.reach}, nil
}

func printConsoleURL(w io.Writer, srv *console.Server) {
	fmt.Fprintf(w, "console: %s\n  (open it once: the link signs this browser in and then stops working)\n", srv.URL())
}

// consoleApprovals asks the console's page and, when standard input is a
// terminal, the terminal too: the first answer wins, the other question is
// withdrawn and the person there is told. The record notes who answered.
func consoleApprovals(srv *console.Server, term *runner.TerminalApprover, interactive bool, rec *runner.Record, out io.Writer) console.Approvals {
	ap := console.Approvals{Server: srv, Answered: func(q console.Question, a console.Answer) {
		verdict := "refused"
		if a.Approved {
			verdict = "approved"
		}
		if interactive {
			fmt.Fprintf(out, "  call %s: %s in %s\n", runner.Printable(q.CallID), verdict, a.By)
		}
		rec.Note("approval_by", console.ApprovalBy{CallID: q.CallID, Kind: q.Kind, Index: q.Index, By: a.By, Approved: a.Approved})
	}}
	if interactive && term != nil {
		ap.Terminal = term
	}
	return ap
}
