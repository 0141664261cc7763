package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/runner"
	browsertool "github.com/agentd-dev/agentd/runner/browser"
	"github.com/agentd-dev/agentd/runner/computer"
)

// BrowserToolPrefix starts the MCP name of each browser member
// (browser_navigate, browser_read_page, ...): next to the computer tool,
// a bare "click" or "screenshot" would be ambiguous.
const BrowserToolPrefix = "browser_"

// approvalBrowser is the record's approval kind of a browser call.
const approvalBrowser = "browser"

// browserTool declares member m as an MCP tool: the toolset's own strict
// schema (every field required, null where the contract allows it).
func browserTool(m browser.Member) *mcp.Tool {
	f := browsertool.FunctionTool(m)
	return &mcp.Tool{
		Name:        BrowserToolPrefix + string(m),
		Title:       "Browser: " + strings.ReplaceAll(string(m), "_", " "),
		Description: f.Description.Value + " (The isolated desktop's Chromium; every field is required, null where allowed.)",
		InputSchema: f.Parameters,
	}
}

// openBrowser makes the session's browser toolset over the guest's
// Chromium (agentd --browser), its loads limited browser-wide to the
// allowed origins. The toolset's consent asks x.consent, set per call.
func (x *session) openBrowser(ctx context.Context) error {
	d, err := x.desk.Client.Browser()
	if err != nil {
		return fmt.Errorf("%w (start the guest's agentd with --browser)", err)
	}
	// The URL policy sees navigate's and new_tab's URL only; the guest's
	// browser refuses every other load (redirects, scripts, links, forms,
	// pop-ups) too.
	if err := d.SetAllowedOrigins(ctx, x.srv.cfg.Origins); err != nil {
		return fmt.Errorf("the guest's browser cannot enforce the allowed origins: %w", err)
	}
	policy := func(_ context.Context, req browser.URLPolicyRequest) (any, error) {
		if x.srv.origins.Allows(req.URL) {
			return true, nil
		}
		x.urlRefused = originText(req.URL)
		return false, nil
	}
	confirm := func(ctx context.Context, req browser.ConsentRequest) (any, error) { return x.consent(ctx, req) }
	x.bts, err = browser.New(d, browser.WithConfirm(confirm), browser.WithURLPolicy(policy))
	return err
}

// originText is u's origin as the client is told it.
func originText(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// browserCall runs one call of browser member m. The toolset's rules hold
// unchanged (strict arguments, the URL policy before consent, consent for
// every call that changes the page, fail closed); consent is asked of the
// client's user through elicitation (the call runs once to the point
// where the toolset asks, is refused there with nothing done, and runs
// again once approved), else of a person at the console or terminal, else
// refused.
func (x *session) browserCall(ctx context.Context, req *mcp.CallToolRequest, m browser.Member) *mcp.CallToolResult {
	args := []byte(req.Params.Arguments)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if _, err := browser.DecodeArguments(m, args); err != nil {
		return errorResult("invalid input, nothing was performed: " + err.Error())
	}
	elicited := elicits(req)
	second := elicited && (len(req.Params.InputResponses) > 0 || req.Params.RequestState != "")
	if second {
		if res := x.elicitCall(req, ""); res != nil {
			return res
		}
	}
	steps := []string{BrowserToolPrefix + string(m)}
	return x.runCall(ctx, steps, func(callID string) *mcp.CallToolResult {
		var asked *browser.ConsentRequest
		x.urlRefused, x.consent = "", func(ctx context.Context, r browser.ConsentRequest) (any, error) {
			ev := runner.ApprovalEvent{Kind: approvalBrowser, Index: -1, Summary: r.Summary()}
			x.event(runner.Event{Kind: runner.EventApprovalAsked, CallID: callID, Approval: &ev})
			var ok bool
			var err error
			switch {
			case second:
				ok, ev.Reason = true, "approved by the client's user"
			case elicited:
				// Asked of the client's user once this run ends, refused.
				asked, ev.Reason = &r, "asked through MCP elicitation"
			case x.srv.cfg.Ask != nil:
				ok, err = x.srv.cfg.Ask(ctx, Question{Kind: approvalBrowser, CallID: callID, Summary: r.Summary(), Text: consentText(r)})
				ev.Reason = "answered"
				if err != nil {
					ev.Reason = err.Error()
				}
			default:
				ev.Reason = errNobodyToAsk.Error()
			}
			ev.Approved = ok && err == nil
			x.event(runner.Event{Kind: runner.EventApprovalAnswered, CallID: callID, Approval: &ev})
			if !ev.Approved {
				x.refusedWhy = ev.Reason
			}
			// A failed question refuses the call; it does not end the session.
			return ev.Approved, nil
		}
		x.refusedWhy = ""
		defer func() { x.consent = nil }()

		start := time.Now()
		res, err := x.bts.Execute(ctx, browser.Call{CallID: callID, Name: string(m), Arguments: string(args)})
		for _, r := range res.Calls {
			x.event(browsertool.CallEvent(r))
			if errors.Is(r.Err, computer.ErrTakenOver) {
				return x.takenResult(ctx, callID, steps, nil)
			}
		}
		if errors.Is(err, computer.ErrTakenOver) {
			return x.takenResult(ctx, callID, steps, nil)
		}
		if err != nil {
			return errorResult(failure(ctx, err) + fmt.Sprintf(" (after %s)", time.Since(start).Round(time.Millisecond)))
		}
		if asked != nil {
			// Nothing was done: the toolset refused at consent. Ask, then run
			// again with the answer.
			return x.elicitCall(req, consentText(*asked))
		}
		if len(res.Outputs) != 1 {
			return errorResult(fmt.Sprintf("the browser answered %d outputs for one call", len(res.Outputs)))
		}
		out := browserResult(res.Outputs[0])
		switch {
		case x.urlRefused != "":
			out.Content = append([]mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("refused: the origin %s is not allowed (allowed: %s); nothing was done",
				x.urlRefused, strings.Join(x.srv.cfg.Origins, ", "))}}, out.Content...)
		case len(res.Calls) == 1 && res.Calls[0].Outcome == browser.OutcomeRefused && x.refusedWhy != "":
			out.Content = append([]mcp.Content{&mcp.TextContent{Text: "not approved (" + x.refusedWhy + "); nothing was done"}}, out.Content...)
		}
		return out
	})
}

// browserResult is a toolset output as MCP content: its JSON text
// ({ok, result, error, state}) and the image of screenshot and zoom. A
// result that is not ok is an error result.
func browserResult(o browser.Output) *mcp.CallToolResult {
	out := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: o.Text}},
		IsError: !strings.HasPrefix(o.Text, `{"ok":true`),
	}
	if o.Image != nil {
		url := ""
		if o.Image.ImageURL != nil {
			url = *o.Image.ImageURL
		}
		out.Content = append(out.Content, imageContent(url))
	}
	return out
}

// imageContent decodes a data URL the browser returned (base64 image).
func imageContent(dataURL string) mcp.Content {
	meta, data, ok := strings.Cut(strings.TrimPrefix(dataURL, "data:"), ",")
	mime, b64 := strings.CutSuffix(meta, ";base64")
	if ok && b64 && strings.HasPrefix(dataURL, "data:") {
		if raw, err := base64.StdEncoding.DecodeString(data); err == nil {
			return &mcp.ImageContent{Data: raw, MIMEType: mime}
		}
	}
	return &mcp.TextContent{Text: "(the browser returned an image that is not a base64 data URL)"}
}

// consentText is what a person is asked about a browser call: the member
// and its arguments (typed text and a script's source by their length
// only) and the page it acts on.
func consentText(r browser.ConsentRequest) string {
	return fmt.Sprintf("agentd: allow this browser call on the isolated desktop?\n%s\non %s", r.Summary(), r.Where())
}
