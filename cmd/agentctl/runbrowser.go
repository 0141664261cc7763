package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/actions/browserrpc"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/browser"
)

// browserConn is what browser mode needs of a guest connection.
type browserConn interface {
	Browser() (*browserrpc.Driver, error)
}

// originList is a repeatable --allow-origin flag.
type originList []string

func (o *originList) String() string { return strings.Join(*o, ",") }

func (o *originList) Set(v string) error {
	*o = append(*o, v)
	return nil
}

// asker asks a person a yes/no question (runner.TerminalApprover.Ask).
type asker func(ctx context.Context, question string) (bool, error)

// runBrowser runs the task in browser mode: the model's tools are the
// browser members of the guest's Chromium (agentd --browser); navigation
// is limited to origins (checked on the host for navigate's URL, enforced
// by the guest's browser for every load), and every call that changes the
// page is asked on the terminal.
func runBrowser(ctx context.Context, conn guestConn, origins []string, ask asker, opts runner.RunOptions) (*runner.RunResult, error) {
	bc, ok := conn.(browserConn)
	if !ok {
		return nil, errors.New("browser mode needs a connection to agentd")
	}
	d, err := bc.Browser()
	if err != nil {
		return nil, fmt.Errorf("%w; start the guest with 'agentctl guest up --browser'", err)
	}
	ts, err := browserToolset(d, origins, ask)
	if err != nil {
		return nil, err
	}
	// The URL policy sees navigate's URL only; the guest's browser refuses
	// every other load (redirects, scripts, links, forms, pop-ups) too.
	if err := d.SetAllowedOrigins(ctx, origins); err != nil {
		return nil, fmt.Errorf("the guest's browser cannot enforce --allow-origin (is its agentd older than agentctl?): %w", err)
	}
	opts.Tools = append(opts.Tools, browser.NewTool(ts))
	return runner.NewRunner(openai.NewClient()).Run(ctx, opts)
}

// browserToolset is the default members over d, navigation limited to
// origins, each change confirmed by ask.
func browserToolset(d browser.Driver, origins []string, ask asker) (*browser.BrowserToolset, error) {
	if len(origins) == 0 {
		return nil, errors.New("browser mode needs --allow-origin (for example https://example.com): the model may navigate only there")
	}
	policy, err := browser.AllowOrigins(origins...)
	if err != nil {
		return nil, err
	}
	confirm := func(ctx context.Context, req browser.ConsentRequest) (any, error) {
		return ask(ctx, consentQuestion(req))
	}
	return browser.New(d, browser.WithConfirm(confirm), browser.WithURLPolicy(policy))
}

// consentQuestion says what the model asks to do and where; typed text
// and a script's source by their length only (ConsentRequest.Summary).
func consentQuestion(req browser.ConsentRequest) string {
	where := "the browser"
	if req.State != nil {
		for _, t := range req.State.Tabs {
			if t.Active {
				where = fmt.Sprintf("%q (%s)", t.Title, t.URL)
			}
		}
	}
	return fmt.Sprintf("\nThe model asks for browser %s on %s.\nApprove? [y/N] ", req.Summary(), where)
}
