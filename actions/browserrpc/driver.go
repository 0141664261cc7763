package browserrpc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentd-dev/agentd/actions/browser"
)

// Caller delivers one call to the guest and returns the reply's Result as
// JSON. It returns a *browser.BrowserError for a recoverable problem the
// guest's driver reported.
type Caller func(ctx context.Context, member string, args json.RawMessage) (json.RawMessage, error)

// Driver is the guest's browser driver seen from the host: it implements
// State, the 17 default methods the guest's Chromium offers (list_tabs is
// derived from State by the toolset) and the opt-in set_checked, click_at,
// hover_at and run_script, which a toolset offers only when selected. Its
// SetAllowedOrigins is the host application's, for the load policy.
type Driver struct {
	call Caller
}

// NewDriver returns a Driver that sends every call through call.
func NewDriver(call Caller) *Driver { return &Driver{call: call} }

func (d *Driver) do(ctx context.Context, member browser.Member, args any) (Result, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return Result{}, fmt.Errorf("browser %s: encode arguments: %w", member, err)
	}
	rep, err := d.call(ctx, string(member), raw)
	if err != nil {
		return Result{}, err
	}
	var res Result
	if err := json.Unmarshal(rep, &res); err != nil {
		return Result{}, fmt.Errorf("browser %s: malformed reply from the guest: %w", member, err)
	}
	return res, nil
}

func (d *Driver) text(ctx context.Context, member browser.Member, args any) (*string, error) {
	res, err := d.do(ctx, member, args)
	return res.Text, err
}

func (d *Driver) read(ctx context.Context, member browser.Member, args any) (browser.ReadResult, error) {
	res, err := d.do(ctx, member, args)
	return browser.ReadResult{Text: res.Text, Read: res.Read}, err
}

func (d *Driver) image(ctx context.Context, member browser.Member, args any) (browser.Image, error) {
	res, err := d.do(ctx, member, args)
	if err != nil {
		return browser.Image{}, err
	}
	if res.Image == nil {
		return browser.Image{}, fmt.Errorf("browser %s: the guest sent no image", member)
	}
	return *res.Image, nil
}

// State reads the guest browser's tabs.
func (d *Driver) State(ctx context.Context) (browser.State, error) {
	rep, err := d.call(ctx, MemberState, json.RawMessage("{}"))
	if err != nil {
		return browser.State{}, err
	}
	var res Result
	if err := json.Unmarshal(rep, &res); err != nil || res.State == nil {
		return browser.State{}, fmt.Errorf("browser state: malformed reply from the guest")
	}
	return *res.State, nil
}

func (d *Driver) Navigate(ctx context.Context, a browser.NavigateArgs) (*string, error) {
	return d.text(ctx, browser.Navigate, a)
}

func (d *Driver) ReadPage(ctx context.Context, a browser.ReadPageArgs) (browser.ReadResult, error) {
	return d.read(ctx, browser.ReadPage, a)
}

func (d *Driver) GetPageText(ctx context.Context, a browser.GetPageTextArgs) (browser.ReadResult, error) {
	return d.read(ctx, browser.GetPageText, a)
}

func (d *Driver) Find(ctx context.Context, a browser.FindArgs) (browser.ReadResult, error) {
	return d.read(ctx, browser.Find, a)
}

func (d *Driver) Click(ctx context.Context, a browser.ClickArgs) (*string, error) {
	return d.text(ctx, browser.Click, a)
}

func (d *Driver) Type(ctx context.Context, a browser.TypeArgs) (*string, error) {
	return d.text(ctx, browser.Type, a)
}

func (d *Driver) Key(ctx context.Context, a browser.KeyArgs) (*string, error) {
	return d.text(ctx, browser.Key, a)
}

func (d *Driver) Scroll(ctx context.Context, a browser.ScrollArgs) (*string, error) {
	return d.text(ctx, browser.Scroll, a)
}

func (d *Driver) ScrollTo(ctx context.Context, a browser.ScrollToArgs) (*string, error) {
	return d.text(ctx, browser.ScrollTo, a)
}

func (d *Driver) WaitFor(ctx context.Context, a browser.WaitForArgs) (*string, error) {
	return d.text(ctx, browser.WaitFor, a)
}

func (d *Driver) SelectOption(ctx context.Context, a browser.SelectOptionArgs) (*string, error) {
	return d.text(ctx, browser.SelectOption, a)
}

func (d *Driver) Hover(ctx context.Context, a browser.HoverArgs) (*string, error) {
	return d.text(ctx, browser.Hover, a)
}

func (d *Driver) Screenshot(ctx context.Context, a browser.ScreenshotArgs) (browser.Image, error) {
	return d.image(ctx, browser.Screenshot, a)
}

func (d *Driver) Zoom(ctx context.Context, a browser.ZoomArgs) (browser.Image, error) {
	return d.image(ctx, browser.Zoom, a)
}

func (d *Driver) NewTab(ctx context.Context, a browser.NewTabArgs) (*string, error) {
	return d.text(ctx, browser.NewTab, a)
}

func (d *Driver) SwitchTab(ctx context.Context, a browser.SwitchTabArgs) (*string, error) {
	return d.text(ctx, browser.SwitchTab, a)
}

func (d *Driver) CloseTab(ctx context.Context, a browser.CloseTabArgs) (*string, error) {
	return d.text(ctx, browser.CloseTab, a)
}

func (d *Driver) SetChecked(ctx context.Context, a browser.SetCheckedArgs) (*string, error) {
	return d.text(ctx, browser.SetChecked, a)
}

func (d *Driver) ClickAt(ctx context.Context, a browser.ClickAtArgs) (*string, error) {
	return d.text(ctx, browser.ClickAt, a)
}

func (d *Driver) HoverAt(ctx context.Context, a browser.HoverAtArgs) (*string, error) {
	return d.text(ctx, browser.HoverAt, a)
}

func (d *Driver) RunScript(ctx context.Context, a browser.RunScriptArgs) (string, error) {
	res, err := d.do(ctx, browser.RunScript, a)
	if err != nil {
		return "", err
	}
	if res.Script == nil {
		return "", fmt.Errorf("browser %s: the guest sent no result", browser.RunScript)
	}
	return *res.Script, nil
}

// SetAllowedOrigins makes the guest's browser load only from origins
// (scheme://host[:port] each), whatever the page does: give it the origins
// of the URL policy before the run. None lifts the limit. The limit stays
// until it is set again or agentd restarts.
func (d *Driver) SetAllowedOrigins(ctx context.Context, origins []string) error {
	raw, err := json.Marshal(allowOriginsArgs{Origins: origins})
	if err != nil {
		return fmt.Errorf("browser %s: encode arguments: %w", MemberAllowOrigins, err)
	}
	if _, err := d.call(ctx, MemberAllowOrigins, raw); err != nil {
		return err
	}
	return nil
}
