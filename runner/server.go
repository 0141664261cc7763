package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/openai/openai-go/v3/responses"
)

// ServerTool declares a tool the API runs itself: web search, file search,
// Code Interpreter, image generation or a remote MCP server. Its result
// items stay in the response chain in their native form (container ids
// kept; re-sent as they are when store is false). A result that failed, is
// incomplete or still in progress stops the turn before any local call of
// the response runs. An MCP server's approval requests are answered through
// RunOptions.ApproveMCP.
func ServerTool(p responses.ToolUnionParam) (Tool, error) {
	var types []string
	label := ""
	switch {
	case p.OfWebSearch != nil, p.OfWebSearchPreview != nil:
		types = []string{"web_search_call"}
	case p.OfFileSearch != nil:
		types = []string{"file_search_call"}
	case p.OfCodeInterpreter != nil:
		types = []string{"code_interpreter_call"}
	case p.OfImageGeneration != nil:
		types = []string{"image_generation_call"}
	case p.OfMcp != nil:
		if p.OfMcp.ServerLabel == "" {
			return nil, errors.New("an MCP tool needs its server_label")
		}
		types = []string{"mcp_call", "mcp_list_tools", "mcp_approval_request"}
		label = p.OfMcp.ServerLabel
	default:
		return nil, errors.New("not a server tool: use web search, file search, Code Interpreter, image generation or MCP")
	}
	return &serverTool{param: p, types: types, label: label}, nil
}

type serverTool struct {
	param responses.ToolUnionParam
	types []string
	// label is an MCP server's label; its items carry it.
	label string
}

// LateResults: a server tool's result may arrive after its item and fail
// the turn.
func (t *serverTool) LateResults() bool { return true }

func (t *serverTool) Params() []responses.ToolUnionParam { return []responses.ToolUnionParam{t.param} }

func (t *serverTool) Claims(item responses.ResponseOutputItemUnion) bool {
	if !slices.Contains(t.types, item.Type) {
		return false
	}
	return t.label == "" || item.ServerLabel == t.label
}

// Prepare checks a result item; an approval request becomes a call.
func (t *serverTool) Prepare(s *Step, item responses.ResponseOutputItemUnion) (Call, error) {
	switch item.Type {
	case "mcp_approval_request":
		r := item.AsMcpApprovalRequest()
		if r.ID == "" {
			return nil, fmt.Errorf("response %s: an mcp_approval_request of server %q has no id", s.ResponseID(), r.ServerLabel)
		}
		return &mcpApproval{req: MCPApprovalRequest{ID: r.ID, ServerLabel: r.ServerLabel, Name: r.Name, Arguments: r.Arguments}}, nil
	case "mcp_list_tools":
		if e := item.Error.OfString; e != "" {
			return nil, fmt.Errorf("response %s: server tool item %s (%s of %q) failed: %s; the turn stops before any local call",
				s.ResponseID(), item.ID, item.Type, item.ServerLabel, e)
		}
		return nil, nil
	}
	failed := item.JSON.Error.Valid()
	// An mcp_call may leave out its status; its error says it failed.
	if (item.Status != "completed" && (item.Type != "mcp_call" || item.Status != "")) || failed {
		status := item.Status
		if failed {
			status = "failed"
		}
		return nil, fmt.Errorf("response %s: server tool item %s (%s) has status %q; the turn stops before any local call",
			s.ResponseID(), item.ID, item.Type, status)
	}
	return nil, nil
}

// MCPApprovalRequest is what ApproveMCP is shown: its own copy of the
// request.
type MCPApprovalRequest struct {
	ID          string // the request's id, which the answer is bound to
	ServerLabel string
	Name        string // the MCP tool
	Arguments   string // JSON text, as the model wrote it
}

// ApprovalMCP is what an ApprovalError refused when ApproveMCP did not
// answer an MCP approval request with a bool.
const ApprovalMCP = "mcp"

// mcpApproval answers one mcp_approval_request.
type mcpApproval struct {
	req     MCPApprovalRequest
	approve bool
}

func (a *mcpApproval) CallID() string { return a.req.ID }

// Approve asks ApproveMCP: exactly true or false answers the request;
// anything else (no callback, an error, a panic, another value) stops the
// run.
func (a *mcpApproval) Approve(ctx context.Context, s *Step) error {
	refusal := &ApprovalError{Kind: ApprovalMCP, CallID: a.req.ID, Index: -1,
		Subject: fmt.Sprintf("tool %s of MCP server %s", a.req.Name, a.req.ServerLabel)}
	f := s.x.approveMCP
	if f == nil {
		refusal.Reason = "no approve_mcp callback is set"
		return refusal
	}
	req := a.req
	v, err := func() (v any, err error) {
		defer func() {
			if p := recover(); p != nil {
				v, err = nil, fmt.Errorf("callback panicked: %v", p)
			}
		}()
		return f(ctx, req)
	}()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("cancelled while asking approve_mcp for request %s: %w", a.req.ID, ctxErr)
	}
	b, isBool := v.(bool)
	switch {
	case err != nil:
		refusal.Reason, refusal.Err = "callback failed", err
		return refusal
	case !isBool:
		refusal.Reason = fmt.Sprintf("callback returned a %T, not true or false", v)
		return refusal
	}
	a.approve = b
	s.Event(Event{Kind: EventApprovalAnswered, CallID: a.req.ID,
		Approval: &ApprovalEvent{Kind: ApprovalMCP, Index: -1, Summary: refusal.Subject, Approved: b, Reason: map[bool]string{true: "approved", false: "refused"}[b]}})
	return nil
}

// Execute answers the request with the decision, bound to its id.
func (a *mcpApproval) Execute(context.Context, *Step) (responses.ResponseInputItemUnionParam, error) {
	return responses.ResponseInputItemParamOfMcpApprovalResponse(a.req.ID, a.approve), nil
}

// checkRun refuses, before anything runs, what the tools and options of a
// run cannot do: a tool_choice that always forces a local tool (the run
// could never end), store false with image generation (the runner needs
// stored responses to continue).
func checkRun(tools []responses.ToolUnionParam, opts *RunOptions) error {
	hasServer, imageGen := false, false
	for _, p := range tools {
		switch {
		case p.OfWebSearch != nil, p.OfWebSearchPreview != nil, p.OfFileSearch != nil, p.OfCodeInterpreter != nil, p.OfMcp != nil:
			hasServer = true
		case p.OfImageGeneration != nil:
			hasServer, imageGen = true, true
		}
	}
	if err := checkBudget(opts); err != nil {
		return err
	}
	if imageGen && opts.Store.Valid() && !opts.Store.Value {
		return errors.New("store false with image generation: the runner needs stored responses to continue after an image is generated (enable store, or make a single request with the SDK)")
	}
	c := opts.ToolChoice
	forced := ""
	switch {
	case c.OfToolChoiceMode.Valid() && c.OfToolChoiceMode.Value == responses.ToolChoiceOptionsRequired && !hasServer:
		forced = `"required" with only local tools`
	case c.OfFunctionTool != nil:
		forced = fmt.Sprintf("function %q", c.OfFunctionTool.Name)
	case c.OfCustomTool != nil:
		forced = fmt.Sprintf("custom tool %q", c.OfCustomTool.Name)
	case c.OfHostedTool != nil && (c.OfHostedTool.Type == "computer" || c.OfHostedTool.Type == "computer_use" || c.OfHostedTool.Type == "computer_use_preview"):
		forced = "the computer"
	case c.OfAllowedTools != nil && c.OfAllowedTools.Mode == responses.ToolChoiceAllowedModeRequired && !slices.ContainsFunc(c.OfAllowedTools.Tools, isServerChoice):
		forced = "required among local tools only"
	}
	if forced != "" {
		return fmt.Errorf("tool_choice forces %s on every request, so the run could never end: use auto for a run (or a single request with the SDK)", forced)
	}
	return nil
}

func isServerChoice(t map[string]any) bool {
	switch t["type"] {
	case "web_search", "web_search_preview", "file_search", "code_interpreter", "image_generation", "mcp":
		return true
	}
	return false
}
