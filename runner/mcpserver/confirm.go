package mcpserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/codetool"
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

// elicitCall asks the client's user about a whole call before any of it
// runs, as an MCP multi round-trip request: the first invocation returns
// an input request (the SDK asks the user, or has the client do it, and
// calls again); the second carries the answer and the request state, a
// one-time nonce this session issued for exactly these arguments. Only an
// accepted form with approve exactly true approves. It returns the result
// to answer with (an input request, or a refusal), or nil when approved.
func (x *session) elicitCall(req *mcp.CallToolRequest, question string) *mcp.CallToolResult {
	digest := sha256.Sum256(append([]byte(req.Params.Name+"\x00"), req.Params.Arguments...))
	x.curMu.Lock()
	defer x.curMu.Unlock()
	if x.asks == nil {
		x.asks = map[string][32]byte{}
	}
	if len(req.Params.InputResponses) == 0 && req.Params.RequestState == "" {
		if len(x.asks) >= maxAsks {
			return errorResult("not approved: too many questions are waiting for an answer; nothing was performed")
		}
		nonce := randhex.String(16)
		x.asks[nonce] = digest
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"approve": &mcp.ElicitParams{Mode: "form", Message: question, RequestedSchema: approveSchema}},
			RequestState:  nonce,
		}
	}
	want, ok := x.asks[req.Params.RequestState]
	delete(x.asks, req.Params.RequestState)
	if !ok || want != digest {
		return errorResult("not approved: the answer does not belong to this call (unknown, used or for other arguments); nothing was performed")
	}
	r, _ := req.Params.InputResponses["approve"].(*mcp.ElicitResult)
	if r == nil || r.Action != "accept" || r.Content["approve"] != true {
		return errorResult("not approved: the client's user refused the call; nothing was performed")
	}
	return nil
}

// maxAsks bounds the questions a session has issued and not seen answered.
const maxAsks = 64

// callQuestion is what the client's user is asked about a computer call.
func callQuestion(steps []string) string {
	var b strings.Builder
	b.WriteString("agentd: allow this computer call on the isolated desktop?\n")
	for i, s := range steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	fmt.Fprintf(&b, "%d. a screenshot", len(steps)+1)
	return b.String()
}

// confirmer is BeforeAction for --confirm when the client cannot be asked:
// the console or the terminal (Config.Approve), else refused.
func (x *session) confirmer() func(context.Context, runner.ActionInfo) (any, error) {
	return func(ctx context.Context, a runner.ActionInfo) (any, error) {
		if f := x.srv.cfg.Approve; f != nil {
			return f(ctx, a)
		}
		return false, errNobodyToAsk
	}
}

// confirmCode asks before an exec_py call (--confirm) when the client
// cannot be asked: the console or the terminal (Config.Ask), else refused.
func (x *session) confirmCode(ctx context.Context, callID, code string) (bool, error) {
	if f := x.srv.cfg.Ask; f != nil {
		return f(ctx, Question{Kind: runner.ApprovalCode, CallID: callID, Summary: fmt.Sprintf("%s, %d lines", codetool.Name, lines(code)),
			Text: codeQuestion(code)})
	}
	return false, errNobodyToAsk
}

// codeQuestion is what a person is asked about an exec_py call.
func codeQuestion(code string) string {
	return fmt.Sprintf("agentd: allow this Python (%d lines) to run on the isolated desktop?\n\n%s", lines(code), code)
}

// approvedEvents record a call the client's user approved as a whole.
func (x *session) approvedEvents(callID string, n int) {
	ev := runner.ApprovalEvent{Kind: runner.ApprovalBeforeAction, Index: -1, Summary: fmt.Sprintf("the whole call (%d steps), through MCP elicitation", n)}
	x.event(runner.Event{Kind: runner.EventApprovalAsked, CallID: callID, Approval: &ev})
	ev.Approved, ev.Reason = true, "approved by the client's user"
	x.event(runner.Event{Kind: runner.EventApprovalAnswered, CallID: callID, Approval: &ev})
}
