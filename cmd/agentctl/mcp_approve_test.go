//go:build linux

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/console"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/browsertest"
	"github.com/agentd-dev/agentd/internal/poll"
)

// browserCall calls browser member m with args.
func browserCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, m string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_" + m, Arguments: args})
	if err != nil {
		t.Fatalf("browser_%s: %v", m, err)
	}
	return res
}

// TestMCPBrowser: with --tools browser and --allow-origin, the browser
// toolset's members are MCP tools with their strict schemas, on the real
// agentd --browser (Chromium): a navigate to the allowed origin is asked
// through elicitation and works; one to another origin is refused by the
// policy naming that origin, before anyone is asked; a read needs no
// question. A client that cannot be asked, with no console or terminal,
// gets every page-changing call refused (fail closed) and the page stays.
func TestMCPBrowser(t *testing.T) {
	r := newMCPRig(t, "--browser")
	form := browsertest.FormServer(t)
	origin := browsertest.Origin(form)
	forbidden := strings.Replace(form.URL(), "127.0.0.1", "localhost", 1)
	ctx := mcpCtx(t)

	var mu sync.Mutex
	var asked []string
	cs := r.connect(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}}, "--tools", "browser", "--allow-origin", origin)

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var nav *mcp.Tool
	for _, tl := range tools.Tools {
		if tl.Name == "computer" {
			t.Fatal("--tools browser offers the computer tool")
		}
		if tl.Name == "browser_navigate" {
			nav = tl
		}
	}
	if nav == nil || len(tools.Tools) != 18 {
		t.Fatalf("%d tools, browser_navigate %v; want the 18 default members", len(tools.Tools), nav)
	}
	if schema, _ := json.Marshal(nav.InputSchema); !strings.Contains(string(schema), `"url"`) || !strings.Contains(string(schema), `"additionalProperties":false`) {
		t.Fatalf("browser_navigate's schema: %s", schema)
	}

	res := browserCall(t, ctx, cs, "navigate", map[string]any{"url": form.URL(), "tab_id": nil})
	if txt := resultText(res); res.IsError || !strings.Contains(txt, `"ok":true`) || !strings.Contains(txt, origin) {
		t.Fatalf("navigate to the allowed origin: error %v %q", res.IsError, txt)
	}
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0], "navigate") || !strings.Contains(asked[0], form.URL()) {
		t.Fatalf("asked %q, want the navigate once", asked)
	}
	mu.Unlock()

	res = browserCall(t, ctx, cs, "navigate", map[string]any{"url": forbidden, "tab_id": nil})
	forbiddenOrigin := strings.TrimSuffix(forbidden, "/")
	if txt := resultText(res); !res.IsError || !strings.Contains(txt, "the origin "+forbiddenOrigin+" is not allowed") {
		t.Fatalf("navigate to %s: error %v %q, want refused naming the origin", forbidden, res.IsError, txt)
	}
	mu.Lock()
	if len(asked) != 1 {
		t.Fatalf("a navigate the policy refuses was asked: %q", asked)
	}
	mu.Unlock()

	res = browserCall(t, ctx, cs, "get_page_text", map[string]any{"tab_id": nil})
	if txt := resultText(res); res.IsError || !strings.Contains(txt, "Pickup") || !strings.Contains(txt, origin) {
		t.Fatalf("get_page_text after the refusal: error %v %q, want the form still shown", res.IsError, txt)
	}
	bad := browserCall(t, ctx, cs, "navigate", map[string]any{"url": form.URL()})
	if !bad.IsError || !strings.Contains(resultText(bad), "nothing was performed") {
		t.Fatalf("navigate without tab_id: error %v %q, want invalid input", bad.IsError, resultText(bad))
	}
	cs.Close()

	// Nobody to ask: refused, and the page stays where it was.
	mute := r.connect(nil, "--tools", "browser", "--allow-origin", origin)
	res = browserCall(t, ctx, mute, "navigate", map[string]any{"url": origin + "/nowhere", "tab_id": nil})
	if txt := resultText(res); !res.IsError || !strings.Contains(txt, "nobody can be asked") {
		t.Fatalf("navigate with nobody to ask: error %v %q, want refused", res.IsError, txt)
	}
	res = browserCall(t, ctx, mute, "list_tabs", map[string]any{})
	if txt := resultText(res); res.IsError || strings.Contains(txt, "nowhere") {
		t.Fatalf("list_tabs after the refusal: error %v %q, want the page unchanged", res.IsError, txt)
	}
}

// TestMCPConsoleApproves: with --confirm, a client that cannot be asked
// and --console, each action is asked in the console's page: approved, the
// click lands once; denied, nothing reaches the desktop.
func TestMCPConsoleApproves(t *testing.T) {
	r := newMCPRig(t)
	ctx := mcpCtx(t)
	cs, stderr := r.connectLogged(nil, "--confirm", "--console")
	answer := consoleAnswerer(t, stderr)

	// A click, then its final screenshot: two questions, both approved.
	r.rec.Sync(t)
	r.rec.Clear()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "computer", Arguments: json.RawMessage(`{"actions":[{"type":"click","x":640,"y":400}]}`)})
		if err != nil {
			res = errorResultOf(err)
		}
		done <- res
	}()
	if q := answer("approve"); !strings.Contains(strings.Join(append(q.Actions, q.Summary), ";"), "click left (640,400)") {
		t.Fatalf("the console was asked %+v", q)
	}
	answer("approve")
	screenshotOf(t, <-done, 1280, 800)
	r.rec.Sync(t)
	if ps := presses(r.rec.Events()); len(ps) != 1 || ps[0].X != 720 || ps[0].Y != 450 {
		t.Fatalf("approved in the console: presses %v, want one at (720,450)", ps)
	}

	r.rec.Clear()
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "computer", Arguments: json.RawMessage(`{"actions":[{"type":"click","x":640,"y":400}]}`)})
		if err != nil {
			res = errorResultOf(err)
		}
		done <- res
	}()
	answer("deny")
	if res := <-done; !res.IsError || !strings.Contains(resultText(res), "not approved") {
		t.Fatalf("denied in the console: error %v %q", res.IsError, resultText(res))
	}
	r.rec.Sync(t)
	if evs := r.rec.Events(); len(evs) != 0 {
		t.Fatalf("a click denied in the console reached the desktop: %v", evs)
	}
}

func errorResultOf(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}

// consoleAnswerer signs in to the console agentctl mcp printed on stderr
// and returns a function that waits for the one question in its page and
// answers it as the page's buttons do ("approve" or "deny").
func consoleAnswerer(t *testing.T, stderr *agentdtest.SyncBuffer) func(word string) console.Question {
	t.Helper()
	// The line may reach the buffer after the session is up: stderr is
	// copied by a goroutine of its own.
	consoleURL := regexp.MustCompile(`console: (http://\S+)`)
	out := poll.For(t, 10*time.Second, "agentctl mcp prints the console URL on stderr", func() (string, bool) {
		out := stderr.String()
		return out, consoleURL.MatchString(out)
	})
	m := consoleURL.FindStringSubmatch(out)
	jar, _ := cookiejar.New(nil)
	page := &http.Client{Jar: jar}
	if resp, err := page.Get(m[1]); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %v %v", resp, err)
	}
	base, _, _ := strings.Cut(m[1], "/login?")
	return func(word string) console.Question {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			resp, err := page.Get(base + "/api/questions")
			if err != nil {
				t.Fatal(err)
			}
			var qs struct{ Questions []console.Question }
			err = json.NewDecoder(resp.Body).Decode(&qs)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("questions: %v", err)
			}
			if len(qs.Questions) == 1 {
				q := qs.Questions[0]
				req, _ := http.NewRequest(http.MethodPost, base+"/api/questions/"+q.ID, strings.NewReader(word))
				host, _, _ := strings.Cut(strings.TrimPrefix(base, "http://"), "/")
				req.Header.Set("Origin", "http://"+host)
				if resp, err := page.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
					t.Fatalf("answer %s: %v %v", word, resp, err)
				}
				return q
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no question in the console")
		return console.Question{}
	}
}

// callAsync calls tool name with args in the background; the result (an
// error as an error result) arrives on the channel.
func callAsync(ctx context.Context, cs *mcp.ClientSession, name string, args any) <-chan *mcp.CallToolResult {
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			res = errorResultOf(err)
		}
		done <- res
	}()
	return done
}

// TestMCPConsoleAnswersCodeAndBrowser: a client that cannot be asked,
// with --console, gets exec_py (--confirm) and the browser toolset's
// consent asked in the console's page, the code or the call shown in
// full: approved, it runs; denied, it is refused and nothing of it
// happens (no input reaches the desktop, the page stays).
func TestMCPConsoleAnswersCodeAndBrowser(t *testing.T) {
	t.Run("exec_py", func(t *testing.T) {
		r := newMCPRig(t, "--code")
		ctx := mcpCtx(t)
		cs, stderr := r.connectLogged(nil, "--confirm", "--console", "--tools", "computer,code")
		answer := consoleAnswerer(t, stderr)
		done := callAsync(ctx, cs, "exec_py", map[string]any{"code": "log('approved-' + 'marker')"})
		if q := answer("approve"); q.Kind != "code" || !strings.Contains(q.Detail, "log('approved-' + 'marker')") {
			t.Fatalf("the console was asked %+v", q)
		}
		if res := <-done; res.IsError || !strings.Contains(resultText(res), "approved-marker") {
			t.Fatalf("approved exec_py: error %v %q", res.IsError, resultText(res))
		}

		r.rec.Sync(t)
		r.rec.Clear()
		done = callAsync(ctx, cs, "exec_py", map[string]any{"code": "pyautogui.click(640, 400)\nlog('denied-' + 'marker')"})
		if q := answer("deny"); q.Kind != "code" || !strings.Contains(q.Detail, "pyautogui.click(640, 400)") {
			t.Fatalf("the console was asked %+v", q)
		}
		if res := <-done; !res.IsError || strings.Contains(resultText(res), "denied-marker") {
			t.Fatalf("denied exec_py: error %v %q, want refused without running", res.IsError, resultText(res))
		}
		r.rec.Sync(t)
		if evs := r.rec.Events(); len(evs) != 0 {
			t.Fatalf("exec_py denied in the console reached the desktop: %v", evs)
		}
	})
	t.Run("browser", func(t *testing.T) {
		r := newMCPRig(t, "--browser")
		form := browsertest.FormServer(t)
		origin := browsertest.Origin(form)
		ctx := mcpCtx(t)
		cs, stderr := r.connectLogged(nil, "--console", "--tools", "browser", "--allow-origin", origin)
		answer := consoleAnswerer(t, stderr)
		done := callAsync(ctx, cs, "browser_navigate", map[string]any{"url": form.URL(), "tab_id": nil})
		if q := answer("approve"); q.Kind != "browser" || !strings.Contains(q.Summary+q.Detail, form.URL()) {
			t.Fatalf("the console was asked %+v", q)
		}
		if res := <-done; res.IsError || !strings.Contains(resultText(res), `"ok":true`) {
			t.Fatalf("approved navigate: error %v %q", res.IsError, resultText(res))
		}

		done = callAsync(ctx, cs, "browser_navigate", map[string]any{"url": origin + "/nowhere", "tab_id": nil})
		if q := answer("deny"); q.Kind != "browser" || !strings.Contains(q.Summary+q.Detail, "/nowhere") {
			t.Fatalf("the console was asked %+v", q)
		}
		if res := <-done; !res.IsError {
			t.Fatalf("denied navigate: %q, want refused", resultText(res))
		}
		res := browserCall(t, ctx, cs, "get_page_text", map[string]any{"tab_id": nil})
		if txt := resultText(res); res.IsError || !strings.Contains(txt, "Pickup") || strings.Contains(txt, "nowhere") {
			t.Fatalf("get_page_text after the denial: error %v %q, want the form still shown", res.IsError, txt)
		}
	})
}
