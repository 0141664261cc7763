package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/codetool"
	"github.com/agentd-dev/agentd/runner/computer"
)

// execTool declares exec_py: Python in the guest's code worker, its
// namespace kept for the MCP session.
func execTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        codetool.Name,
		Title:       "Python on the isolated desktop",
		Description: codetool.DefaultDescription + " The namespace lives for this MCP session.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"code":       map[string]any{"type": "string", "description": "Python to run"},
				"deadline_s": map[string]any{"type": "number", "minimum": 0.001, "maximum": 1800, "description": "time limit in seconds (default 60)"},
			},
			"required":             []string{"code"},
			"additionalProperties": false,
		},
	}
}

// exec runs one exec_py call in the session's worker.
func (x *session) exec(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	var in struct {
		Code     *string  `json:"code"`
		Deadline *float64 `json:"deadline_s"`
	}
	dec := json.NewDecoder(bytes.NewReader(req.Params.Arguments))
	dec.DisallowUnknownFields()
	err := dec.Decode(&in)
	if err == nil && in.Code == nil {
		err = errors.New(`missing "code"`)
	}
	if err == nil && in.Deadline != nil && (*in.Deadline <= 0 || *in.Deadline > 1800) {
		err = errors.New(`"deadline_s" must be in (0, 1800]`)
	}
	if err != nil {
		return errorResult("invalid input, nothing was run: " + err.Error())
	}
	var deadline time.Duration
	if in.Deadline != nil {
		deadline = time.Duration(*in.Deadline * float64(time.Second))
	}
	elicited := x.srv.cfg.Confirm && elicits(req)
	if elicited {
		if res := x.elicitCall(req, codeQuestion(*in.Code)); res != nil {
			return res
		}
	}
	steps := []string{fmt.Sprintf("%s, %d lines", codetool.Name, lines(*in.Code))}
	return x.runCall(ctx, steps, func(callID string) *mcp.CallToolResult {
		switch {
		case elicited:
			x.approvedEvents(callID, 1)
		case x.srv.cfg.Confirm:
			ev := runner.ApprovalEvent{Kind: runner.ApprovalCode, Index: -1, Summary: steps[0]}
			x.event(runner.Event{Kind: runner.EventApprovalAsked, CallID: callID, Approval: &ev})
			ok, err := x.confirmCode(ctx, callID, *in.Code)
			ev.Approved, ev.Reason = ok, "approved"
			switch {
			case err != nil:
				ev.Approved, ev.Reason = false, err.Error()
			case !ok:
				ev.Reason = "refused"
			}
			x.event(runner.Event{Kind: runner.EventApprovalAnswered, CallID: callID, Approval: &ev})
			if !ev.Approved {
				return errorResult("not approved: the code was not run (" + ev.Reason + ")")
			}
		}
		prog := startProgress(ctx, req, 0)
		start := time.Now()
		res, err := x.desk.Client.Exec(ctx, *in.Code, deadline)
		prog.end()
		first := x.execs == 0
		x.execs++
		if errors.Is(err, computer.ErrTakenOver) {
			return x.takenResult(ctx, callID, steps, err)
		}
		if err != nil {
			return errorResult(failure(ctx, err))
		}
		x.event(runner.Event{Kind: runner.EventCode, CallID: callID, Duration: runner.Duration(time.Since(start)), Code: &runner.CodeEvent{
			Lines: lines(*in.Code), OutputBytes: len(res.Output), Images: len(res.Images), Raised: res.Traceback != "",
			Fresh: res.FreshNamespace, Lost: res.NamespaceLost, Stopped: res.Stopped}})
		out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: codetool.OutputText(res, first)}}}
		for _, im := range res.Images {
			out.Content = append(out.Content, &mcp.ImageContent{Data: im.PNG, MIMEType: "image/png"})
		}
		return out
	})
}

func lines(code string) int {
	if code == "" {
		return 0
	}
	return strings.Count(strings.TrimRight(code, "\n"), "\n") + 1
}
