package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentd-dev/agentd/console"
	"github.com/agentd-dev/agentd/runner"
)

func init() {
	register("console", "serve the console page: the desktop live, the steps of each run", runConsole)
}

func runConsole(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agentctl console", flag.ContinueOnError)
	var g guestFlags
	g.register(fs)
	runs := fs.String("record-dir", "runs", "folder holding the run records (as agentctl run writes them)")
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to serve the page on")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, `usage: agentctl console [--guest ADDR|NAME] [--record-dir D] [--listen 127.0.0.1:PORT]

Serves the console on this machine: the guest's desktop live (view only),
and every run under --record-dir step by step. Open the printed URL once:
it carries a one-time secret that your browser exchanges for a cookie.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	cfg := console.Config{Listen: *listen, RunsDir: *runs}
	if g.addr != "" {
		gs, err := consoleGuest(&g)
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
func consoleGuest(g *guestFlags) (*console.Guest, error) {
	if err := g.resolve(); err != nil {
		return nil, err
	}
	tok, err := g.token()
	if err != nil {
		return nil, err
	}
	return &console.Guest{Addr: g.addr, Token: tok}, nil
}

func printConsoleURL(w io.Writer, srv *console.Server) {
	fmt.Fprintf(w, "console: %s\n  (open it once: the link signs this browser in and then stops working)\n", srv.URL())
}

// approveEither asks the console's page and, when standard input is a
// terminal, the terminal too: the first answer wins, the other question is
// withdrawn and the person there is told. The record notes who answered.
func approveEither(srv *console.Server, term *runner.TerminalApprover, interactive bool, rec *runner.Record, out io.Writer) func(context.Context, runner.CallInfo, []runner.SafetyCheck) (any, error) {
	return func(ctx context.Context, call runner.CallInfo, checks []runner.SafetyCheck) (any, error) {
		q := console.Question{Kind: runner.ApprovalSafetyChecks, CallID: call.CallID}
		for _, a := range call.Actions {
			q.Actions = append(q.Actions, a.String())
		}
		for _, c := range checks {
			q.Checks = append(q.Checks, c.Code+": "+c.Message)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type answer struct {
			ok  bool
			err error
			by  string
		}
		answers := make(chan answer, 2)
		asked := 1
		go func() { ok, err := srv.Ask(ctx, q); answers <- answer{ok, err, "the console"} }()
		if interactive {
			asked++
			go func() {
				v, err := term.ApproveSafetyChecks(ctx, call, checks)
				answers <- answer{v == true, err, "the terminal"}
			}()
		}
		first := <-answers
		cancel()
		for range asked - 1 {
			<-answers
		}
		if first.err != nil {
			return false, first.err
		}
		verdict := "refused"
		if first.ok {
			verdict = "approved"
		}
		if interactive {
			fmt.Fprintf(out, "  call %s: %s in %s\n", runner.Printable(call.CallID), verdict, first.by)
		}
		rec.Note("approval_by", map[string]any{"call_id": call.CallID, "kind": q.Kind, "by": first.by, "approved": first.ok})
		return first.ok, nil
	}
}
