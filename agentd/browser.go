package agentd

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/actions/wire"
)

// Browser serves the browser op family: one call of the guest's browser
// driver (package browserrpc's Serve over a chromium.Browser).
type Browser interface {
	// Call runs member with its JSON arguments and returns the result as
	// JSON. A *browser.BrowserError is shown to the model as it is.
	Call(ctx context.Context, member string, args json.RawMessage) (json.RawMessage, error)
}

// runBrowser runs one browser call to its reply.
func (s *session) runBrowser(sessCtx, ctx context.Context, req request) {
	if s.srv.cfg.Browser == nil {
		s.replyError(sessCtx, req.id, wire.CodeBadRequest, "this agentd has no browser: start it with --browser", -1)
		return
	}
	res, err := s.srv.cfg.Browser.Call(ctx, req.browser.Member, req.browser.Args)
	var be *browser.BrowserError
	switch {
	case err == nil:
		s.send(sessCtx, wire.Reply{Op: wire.OpDone, ID: req.id, Browser: res})
	case ctx.Err() != nil:
		s.send(sessCtx, wire.Reply{Op: wire.OpError, ID: req.id, Error: s.stopError(sessCtx, ctx.Err(), -1, "during browser call")})
	case errors.As(err, &be):
		s.replyError(sessCtx, req.id, wire.CodeBrowserError, be.Message, -1)
	default:
		s.srv.cfg.Logf("browser %s failed: %v", req.browser.Member, err)
		s.replyError(sessCtx, req.id, wire.CodeFailed, "browser "+req.browser.Member+": "+err.Error(), -1)
	}
}
