// Package browserrpc carries a browser driver's calls as messages, so the
// driver inside the guest (agentd's Chromium) serves a BrowserToolset on the
// host: Serve runs one call on the guest side; Driver implements the
// browser package's driver roles on the host side over any transport that
// delivers a call and returns its reply (agentd's websocket, in package
// guest).
//
// A call is a member name ("state" for the state) and the member's
// arguments as JSON; the reply is a Result as JSON. Serve decodes the
// arguments again with browser.DecodeArguments, so the guest never trusts
// the host's validation, and refuses a member its driver does not offer.
package browserrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/agentd-dev/agentd/actions/browser"
)

// MemberState is the call that reads the driver's state.
const MemberState = "state"

// MemberAllowOrigins is the call that sets the origins the guest's browser
// may load (LoadPolicy). It is the host application's call: no toolset
// member sends it, so the model cannot change the policy.
const MemberAllowOrigins = "allow_origins"

// LoadPolicy is a driver that enforces the allowed origins where the
// browser loads (every document, frame, pop-up and request, redirects
// included), not only for navigate's URL. No origins lifts the limit.
type LoadPolicy interface {
	SetAllowedOrigins(ctx context.Context, origins []string) error
}

// allowOriginsArgs are allow_origins's arguments.
type allowOriginsArgs struct {
	Origins []string `json:"origins"`
}

// Result is a call's reply; the member's kind of result sets one field, or
// none for a method that returned no text.
type Result struct {
	Text  *string                `json:"text,omitempty"`
	Read  *browser.BrowserReadV1 `json:"read,omitempty"`
	Image *browser.Image         `json:"image,omitempty"`
	State *browser.State         `json:"state,omitempty"`
	// Script is run_script's result ("" is one).
	Script *string `json:"script,omitempty"`
}

// ErrNotOffered is matched (errors.Is) when the guest's driver does not
// implement the member called.
var ErrNotOffered = errors.New("the guest's browser does not offer this member")

// Serve runs one call on d and returns its Result as JSON. A
// *browser.BrowserError from the driver is returned as it is, for the
// transport to carry as such.
func Serve(ctx context.Context, d browser.Driver, member string, args []byte) ([]byte, error) {
	var res Result
	if member == MemberAllowOrigins {
		lp, ok := d.(LoadPolicy)
		if !ok {
			return nil, fmt.Errorf("%s: %w", member, ErrNotOffered)
		}
		var a allowOriginsArgs
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return nil, fmt.Errorf("%s: %w", member, err)
		}
		if err := lp.SetAllowedOrigins(ctx, a.Origins); err != nil {
			return nil, fmt.Errorf("%s: %w", member, err)
		}
		return json.Marshal(res)
	}
	if member == MemberState {
		if len(args) > 0 && string(args) != "{}" && string(args) != "null" {
			return nil, errors.New("state takes no arguments")
		}
		st, err := d.State(ctx)
		if err != nil {
			return nil, err
		}
		res.State = &st
		return json.Marshal(res)
	}
	m := browser.Member(member)
	a, err := browser.DecodeArguments(m, args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", member, err)
	}
	text := func(s *string, err error) error { res.Text = s; return err }
	read := func(r browser.ReadResult, err error) error {
		res.Text, res.Read = r.Text, r.Read
		return err
	}
	image := func(img browser.Image, err error) error { res.Image = &img; return err }
	offered := true
	switch a := a.(type) {
	case browser.NavigateArgs:
		if x, ok := d.(browser.Navigator); ok {
			err = text(x.Navigate(ctx, a))
		} else {
			offered = false
		}
	case browser.ReadPageArgs:
		if x, ok := d.(browser.PageReader); ok {
			err = read(x.ReadPage(ctx, a))
		} else {
			offered = false
		}
	case browser.GetPageTextArgs:
		if x, ok := d.(browser.PageTextReader); ok {
			err = read(x.GetPageText(ctx, a))
		} else {
			offered = false
		}
	case browser.FindArgs:
		if x, ok := d.(browser.Finder); ok {
			err = read(x.Find(ctx, a))
		} else {
			offered = false
		}
	case browser.ClickArgs:
		if x, ok := d.(browser.Clicker); ok {
			err = text(x.Click(ctx, a))
		} else {
			offered = false
		}
	case browser.TypeArgs:
		if x, ok := d.(browser.Typer); ok {
			err = text(x.Type(ctx, a))
		} else {
			offered = false
		}
	case browser.KeyArgs:
		if x, ok := d.(browser.KeyPresser); ok {
			err = text(x.Key(ctx, a))
		} else {
			offered = false
		}
	case browser.ScrollArgs:
		if x, ok := d.(browser.Scroller); ok {
			err = text(x.Scroll(ctx, a))
		} else {
			offered = false
		}
	case browser.ScrollToArgs:
		if x, ok := d.(browser.TargetScroller); ok {
			err = text(x.ScrollTo(ctx, a))
		} else {
			offered = false
		}
	case browser.WaitForArgs:
		if x, ok := d.(browser.TextWaiter); ok {
			err = text(x.WaitFor(ctx, a))
		} else {
			offered = false
		}
	case browser.SelectOptionArgs:
		if x, ok := d.(browser.OptionSelector); ok {
			err = text(x.SelectOption(ctx, a))
		} else {
			offered = false
		}
	case browser.HoverArgs:
		if x, ok := d.(browser.Hoverer); ok {
			err = text(x.Hover(ctx, a))
		} else {
			offered = false
		}
	case browser.ScreenshotArgs:
		if x, ok := d.(browser.Screenshotter); ok {
			err = image(x.Screenshot(ctx, a))
		} else {
			offered = false
		}
	case browser.ZoomArgs:
		if x, ok := d.(browser.Zoomer); ok {
			err = image(x.Zoom(ctx, a))
		} else {
			offered = false
		}
	case browser.NewTabArgs:
		if x, ok := d.(browser.TabOpener); ok {
			err = text(x.NewTab(ctx, a))
		} else {
			offered = false
		}
	case browser.SwitchTabArgs:
		if x, ok := d.(browser.TabSwitcher); ok {
			err = text(x.SwitchTab(ctx, a))
		} else {
			offered = false
		}
	case browser.CloseTabArgs:
		if x, ok := d.(browser.TabCloser); ok {
			err = text(x.CloseTab(ctx, a))
		} else {
			offered = false
		}
	case browser.SetCheckedArgs:
		if x, ok := d.(browser.CheckedSetter); ok {
			err = text(x.SetChecked(ctx, a))
		} else {
			offered = false
		}
	case browser.ClickAtArgs:
		if x, ok := d.(browser.PointClicker); ok {
			err = text(x.ClickAt(ctx, a))
		} else {
			offered = false
		}
	case browser.HoverAtArgs:
		if x, ok := d.(browser.PointHoverer); ok {
			err = text(x.HoverAt(ctx, a))
		} else {
			offered = false
		}
	case browser.RunScriptArgs:
		if x, ok := d.(browser.ScriptRunner); ok {
			var out string
			out, err = x.RunScript(ctx, a)
			res.Script = &out
		} else {
			offered = false
		}
	default:
		offered = false
	}
	if !offered {
		return nil, fmt.Errorf("%s: %w", member, ErrNotOffered)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// Server serves calls on one driver: agentd's Browser.
type Server struct {
	Driver browser.Driver
}

// Call runs one call with Serve.
func (s Server) Call(ctx context.Context, member string, args json.RawMessage) (json.RawMessage, error) {
	return Serve(ctx, s.Driver, member, args)
}

// LocalAgentdArgs are the flags that make a local agentd start its
// browser: --browser, and when agentd runs as root (Chromium refuses root
// with its sandbox on) --browser-user nobody.
func LocalAgentdArgs() []string {
	if os.Geteuid() == 0 {
		return []string{"--browser", "--browser-user", "nobody"}
	}
	return []string{"--browser"}
}
