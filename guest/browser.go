package guest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/actions/browserrpc"
	"github.com/agentd-dev/agentd/actions/wire"
)

// ErrNoBrowser is returned by Browser when agentd was started without
// --browser.
var ErrNoBrowser = errors.New("guest: agentd offers no browser (start it with --browser)")

// Browser returns the guest's browser driver, for browser.New: its calls
// go over this connection, one at a time with the computer actions (a call
// while another is in flight fails with ErrBusy).
func (c *Client) Browser() (*browserrpc.Driver, error) {
	if !slices.Contains(c.hello.Capabilities, wire.CapabilityBrowser) {
		return nil, ErrNoBrowser
	}
	return browserrpc.NewDriver(c.callBrowser), nil
}

// callBrowser sends one browser call; agentd's browser_error becomes the
// *browser.BrowserError the model is shown.
func (c *Client) callBrowser(ctx context.Context, member string, args json.RawMessage) (json.RawMessage, error) {
	rep, _, err := c.call(ctx, wire.Request{Op: wire.OpBrowser, Browser: &wire.BrowserCall{Member: member, Args: args}}, nil)
	var ge *Error
	if errors.As(err, &ge) && ge.Code == wire.CodeBrowserError {
		return nil, browser.NewBrowserError(ge.Message)
	}
	if err != nil {
		return nil, fmt.Errorf("browser %s: %w", member, err)
	}
	return rep.Browser, nil
}
