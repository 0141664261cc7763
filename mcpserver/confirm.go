package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/runner"
)

// errNobodyToAsk refuses an action when --confirm is on and nobody can be
// asked: fail closed.
var errNobodyToAsk = errors.New("nobody can be asked: the client does not support elicitation and no console or terminal answers")

// approveSchema is the one field an elicitation asks for.
var approveSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "true runs it; anything else refuses it"},
	},
	"required": []string{"approve"},
}

// elicits reports whether the client can ask its user (form elicitation).
func elicits(req *mcp.CallToolRequest) bool {
	c := req.ClientCapabilities()
	return c != nil && c.Elicitation != nil && (c.Elicitation.Form != nil || c.Elicitation.URL == nil)
}

// ask asks the client's user through elicitation: only an accepted form
// with approve exactly true approves.
func ask(ctx context.Context, req *mcp.CallToolRequest, question string) (bool, error) {
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: question, RequestedSchema: approveSchema})
	if err != nil {
		return false, fmt.Errorf("elicitation: %w", err)
	}
	return res.Action == "accept" && res.Content["approve"] == true, nil
}

// confirmer is BeforeAction for --confirm: the client's user through
// elicitation when the client supports it, else the console or the
// terminal (Config.Approve), else refused.
func (x *session) confirmer(req *mcp.CallToolRequest) func(context.Context, runner.ActionInfo) (any, error) {
	return func(ctx context.Context, a runner.ActionInfo) (any, error) {
		if elicits(req) {
			what := a.Action.String()
			if a.IsFinalScreenshot {
				what = "the final screenshot"
			}
			return ask(ctx, req, fmt.Sprintf("agentd: allow step %d of %d of this computer call on the isolated desktop: %s?",
				a.Index+1, len(a.Actions)+1, what))
		}
		if f := x.srv.cfg.Approve; f != nil {
			return f(ctx, a)
		}
		return false, errNobodyToAsk
	}
}

// confirmCode asks before an exec_py call (--confirm), as confirmer does.
func (x *session) confirmCode(ctx context.Context, req *mcp.CallToolRequest, code string) (bool, error) {
	q := fmt.Sprintf("agentd: allow this Python (%d lines) to run on the isolated desktop?\n\n%s", lines(code), code)
	if elicits(req) {
		return ask(ctx, req, q)
	}
	if f := x.srv.cfg.AskText; f != nil {
		return f(ctx, q)
	}
	return false, errNobodyToAsk
}
