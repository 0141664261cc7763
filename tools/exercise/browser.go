package exercise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/runner"
	browsertool "github.com/agentd-dev/agentd/runner/browser"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// browserRefs are the refs the browser-mode model uses: the guest's
// Chromium numbers the form's controls in the order of its accessibility
// tree. driveBrowser checks the read_page output it was sent says the same.
var browserRefs = map[string]string{"Name": "e1", "Date (YYYY-MM-DD)": "e2", "Pickup slot": "e3", "Fragile": "e4", "Submit": "e5"}

// lookalike is a host that starts like the form's and is not it.
func lookalike(formURL string) (string, error) {
	u, err := url.Parse(formURL)
	if err != nil {
		return "", fmt.Errorf("exercise: form URL: %w", err)
	}
	return fmt.Sprintf("%s://%s.evil.test:%s/", u.Scheme, u.Hostname(), u.Port()), nil
}

// BrowserScript is the scripted model of browser mode: it opens the form,
// reads it, fills and submits it in one response through refs
// (type, select_option, click), then tries a lookalike host, which the URL
// policy refuses.
func BrowserScript(formURL string) ([]respserver.Turn, error) {
	evil, err := lookalike(formURL)
	if err != nil {
		return nil, err
	}
	call := func(id, name string, args map[string]any) respserver.Item {
		raw, _ := json.Marshal(args)
		it := respserver.FunctionCall(name, string(raw))
		it["call_id"] = "call_" + id
		return it
	}
	return []respserver.Turn{
		respserver.Items(call("open", "navigate", map[string]any{"url": formURL, "tab_id": nil})),
		respserver.Items(call("read", "read_page", map[string]any{"filter": "interactive", "tab_id": nil})),
		respserver.Items(
			call("name", "type", map[string]any{"text": PickupName, "target": browserRefs["Name"], "tab_id": nil}),
			call("date", "type", map[string]any{"text": PickupDate, "target": browserRefs["Date (YYYY-MM-DD)"], "tab_id": nil}),
			call("slot", "select_option", map[string]any{"target": browserRefs["Pickup slot"], "values": []string{PickupSlot}, "tab_id": nil}),
			call("fragile", "click", map[string]any{"target": browserRefs["Fragile"], "tab_id": nil}),
			call("submit", "click", map[string]any{"target": browserRefs["Submit"], "tab_id": nil}),
		),
		respserver.Items(call("evil", "navigate", map[string]any{"url": evil, "tab_id": nil})),
		respserver.Final("The pickup is booked."),
	}, nil
}

// driveBrowser runs the browser-mode script against the guest's Chromium
// (agentd --browser) through the runner and the browser toolset: every
// change is confirmed, navigation is limited to the form's origin.
func driveBrowser(ctx context.Context, client *guest.Client, formURL string, out io.Writer, cfg RunConfig, rep *Report) error {
	d, err := client.Browser()
	if err != nil {
		return fmt.Errorf("exercise: %w", err)
	}
	turns, err := BrowserScript(formURL)
	if err != nil {
		return err
	}
	u, _ := url.Parse(formURL)
	allow, err := browser.AllowOrigins(u.Scheme + "://" + u.Host)
	if err != nil {
		return err
	}
	if err := d.SetAllowedOrigins(ctx, []string{u.Scheme + "://" + u.Host}); err != nil {
		return fmt.Errorf("exercise: %w", err)
	}
	var refused []string
	policy := func(ctx context.Context, req browser.URLPolicyRequest) (any, error) {
		ok, err := allow(ctx, req)
		if ok != true {
			refused = append(refused, req.URL.String())
		}
		fmt.Fprintf(out, "  url policy %s: %s → allowed=%v\n", req.CallID, req.URL, ok)
		return ok, err
	}
	confirm := func(_ context.Context, req browser.ConsentRequest) (any, error) {
		rep.BeforeAction++
		fmt.Fprintf(out, "  confirm %s %s → approved\n", req.CallID, req.Member)
		return true, nil
	}
	ts, err := browser.New(d, browser.WithConfirm(confirm), browser.WithURLPolicy(policy))
	if err != nil {
		return err
	}
	model, err := scriptedRun{
		turns:  turns,
		suffix: "-exercise-browser",
		model:  "computer-use-exercise-browser",
		input:  "Book a pickup for Zoë Ñúñez-Łukasz on 2025-03-14 in the afternoon, marked fragile.",
		tool:   browsertool.NewTool(ts),
		onEvent: func(ev runner.Event) {
			if ev.Kind != runner.EventFunction {
				return
			}
			rep.Actions++
			status := "ok"
			if ev.Function.Error != "" {
				status = ev.Function.Error
			}
			fmt.Fprintf(out, "  %-14s %s %s\n", ev.Function.Name, status, time.Duration(ev.Duration).Round(time.Millisecond))
		},
	}.run(ctx, cfg, rep, out)
	if err != nil {
		return err
	}
	evil, _ := lookalike(formURL)
	if len(refused) != 1 || refused[0] != evil {
		return fmt.Errorf("exercise: the URL policy refused %q, want exactly the lookalike %s", refused, evil)
	}
	return checkBrowserOutputs(model)
}

// checkBrowserOutputs checks what the model was sent: read_page mapped the
// labels to the refs it used, and the lookalike navigation was refused by
// the URL policy.
func checkBrowserOutputs(model *respserver.Server) error {
	outputs := map[string]struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}{}
	for _, r := range model.Requests() {
		var body struct {
			Input json.RawMessage `json:"input"`
		}
		var items []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output any    `json:"output"`
		}
		if json.Unmarshal(r.Body, &body) != nil || json.Unmarshal(body.Input, &items) != nil {
			continue
		}
		for _, it := range items {
			if text, ok := it.Output.(string); ok && it.Type == "function_call_output" {
				o := outputs[it.CallID]
				if err := json.Unmarshal([]byte(text), &o); err != nil {
					return fmt.Errorf("exercise: output of %s: %w", it.CallID, err)
				}
				outputs[it.CallID] = o
			}
		}
	}
	var read browser.BrowserReadV1
	if err := json.Unmarshal(outputs["call_read"].Result, &read); err != nil {
		return fmt.Errorf("exercise: read_page output: %w", err)
	}
	var problems []string
	for _, e := range read.Elements {
		if want, ok := browserRefs[e.Label]; ok && e.Ref != want {
			problems = append(problems, fmt.Sprintf("read_page gave %s ref %s, the model used %s", e.Label, e.Ref, want))
		}
	}
	if evil := outputs["call_evil"]; evil.OK || !strings.Contains(evil.Error, "URL policy") {
		problems = append(problems, fmt.Sprintf("the lookalike navigation was answered %+v, want refused by the URL policy", evil))
	}
	if len(problems) > 0 {
		return errors.New("exercise: " + strings.Join(problems, "; "))
	}
	return nil
}
