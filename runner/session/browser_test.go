package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/internal/browsertest"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// Browser mode against the real agentd --browser: the model navigates to
// the allowed form and reads it; each change is asked, with what and
// where; a navigation elsewhere is refused without asking.
func TestRunBrowserMode(t *testing.T) {
	c := browsertest.StartGuest(t)
	srv := browsertest.FormServer(t)
	call := func(id, name string, args map[string]any) respserver.Item {
		raw, _ := json.Marshal(args)
		it := respserver.FunctionCall(name, string(raw))
		it["call_id"] = id
		return it
	}
	model, base := respserver.Start(
		respserver.Items(call("c1", "navigate", map[string]any{"url": srv.URL(), "tab_id": nil})),
		respserver.Items(call("c2", "navigate", map[string]any{"url": "https://example.com/", "tab_id": nil})),
		respserver.Items(call("c3", "read_page", map[string]any{"filter": "interactive", "tab_id": nil})),
		respserver.Final("The form has a Name field."),
	)
	defer model.Close()
	t.Setenv("OPENAI_BASE_URL", base)
	t.Setenv("OPENAI_API_KEY", "test")

	var asked []string
	ask := func(_ context.Context, q string) (bool, error) {
		asked = append(asked, q)
		return true, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &Session{Config: Config{Mode: Browser, AllowOrigins: []string{browsertest.Origin(srv)}}}
	loop, err := s.Loop(ctx, openai.NewClient(), c, ask, runner.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := loop.Run(ctx, runner.RunOptions{Model: "test", Input: "read the form", MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := model.Err(); err != nil {
		t.Fatal(err)
	}
	if res.FinalMessage != "The form has a Name field." {
		t.Errorf("final message %q", res.FinalMessage)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "navigate") || !strings.Contains(asked[0], srv.URL()) {
		t.Errorf("asked %q, want one question about the navigation to the form", asked)
	}
}

func TestBrowserModeNeedsOrigins(t *testing.T) {
	if _, err := BrowserToolset(nil, nil, nil); err == nil || !strings.Contains(err.Error(), "--allow-origin") {
		t.Errorf("error %v, want one naming --allow-origin", err)
	}
	if _, err := BrowserToolset(nil, []string{"https://example.com/path"}, nil); err == nil {
		t.Error("an origin with a path was accepted")
	}
}

// The terminal question of browser mode shows typed text by its length
// only, as computer mode does.
func TestBrowserConsentQuestionHidesTypedText(t *testing.T) {
	const secret = "correct-horse-battery"
	target := "e1"
	q := ConsentQuestion(browser.ConsentRequest{Member: browser.Type, Arguments: browser.TypeArgs{Text: secret, Target: &target},
		State: &browser.State{Version: browser.StateV1, Tabs: []browser.Tab{{ID: "tab-1", Title: "Login", URL: "https://shop.example", Active: true}}}})
	if strings.Contains(q, secret) || !strings.Contains(q, "type 21 chars") || !strings.Contains(q, `"target":"e1"`) || !strings.Contains(q, "https://shop.example") {
		t.Errorf("question %q: want the call with the text's length, not the text", q)
	}
}
