package browserrpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/actions/browser"
)

// clickOnly offers State and Click, and records the clicks it did.
type clickOnly struct{ clicked []string }

func (d *clickOnly) State(context.Context) (browser.State, error) {
	return browser.State{Version: browser.StateV1, Tabs: []browser.Tab{{ID: "t1", Title: "T", URL: "about:blank", Active: true}}}, nil
}

func (d *clickOnly) Click(_ context.Context, a browser.ClickArgs) (*string, error) {
	if a.Target == "gone" {
		return nil, browser.NewBrowserError("stale")
	}
	d.clicked = append(d.clicked, a.Target)
	return browser.Text("clicked"), nil
}

// Serve decodes every call again on the guest side: whatever the host sent,
// nothing invalid reaches the driver.
func TestServeValidatesAgain(t *testing.T) {
	for _, c := range []struct {
		name, member, args, want string
	}{
		{"unknown field", "click", `{"target":"e1","tab_id":null,"x":1}`, "unknown"},
		{"missing field", "click", `{"target":"e1"}`, "tab_id"},
		{"wrong type", "click", `{"target":1,"tab_id":null}`, "target"},
		{"not json", "click", `{`, "click"},
		{"unknown member", "format_disk", `{}`, "format_disk"},
		{"not offered", "navigate", `{"url":"https://example.com/","tab_id":null}`, "does not offer"},
		{"state with arguments", "state", `{"x":1}`, "no arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &clickOnly{}
			_, err := Serve(context.Background(), d, c.member, []byte(c.args))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
			if len(d.clicked) != 0 {
				t.Errorf("the driver clicked %v", d.clicked)
			}
		})
	}
}

// A call goes through Serve and back into Driver unchanged; a BrowserError
// stays one.
func TestRoundTrip(t *testing.T) {
	d := &clickOnly{}
	host := NewDriver(func(ctx context.Context, member string, args json.RawMessage) (json.RawMessage, error) {
		return Server{Driver: d}.Call(ctx, member, args)
	})
	ctx := context.Background()
	st, err := host.State(ctx)
	if err != nil || len(st.Tabs) != 1 || st.Tabs[0].ID != "t1" || st.Version != browser.StateV1 {
		t.Fatalf("state %+v, %v", st, err)
	}
	text, err := host.Click(ctx, browser.ClickArgs{Target: "e1"})
	if err != nil || text == nil || *text != "clicked" || len(d.clicked) != 1 || d.clicked[0] != "e1" {
		t.Fatalf("click: %v %v, driver saw %v", text, err, d.clicked)
	}
	_, err = host.Click(ctx, browser.ClickArgs{Target: "gone"})
	var be *browser.BrowserError
	if !errors.As(err, &be) || be.Message != "stale" {
		t.Fatalf("click on a gone target: %v, want the BrowserError", err)
	}
	if _, err := host.Navigate(ctx, browser.NavigateArgs{URL: "https://example.com/"}); !errors.Is(err, ErrNotOffered) {
		t.Fatalf("navigate: %v, want ErrNotOffered", err)
	}
}
