package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/computer"
)

// ComputerToolName is the MCP tool of the desktop.
const ComputerToolName = "computer"

// computerTool declares the computer tool: one call is a list of the
// OpenAI computer tool's actions, strictly as that tool defines them.
func computerTool(v wire.View) *mcp.Tool {
	xy := map[string]any{"type": "integer", "minimum": 0}
	keys := map[string]any{"type": "array", "items": map[string]any{"type": "string"},
		"description": "keys held during the action (e.g. [\"ctrl\"]) or, for keypress, pressed together (e.g. [\"ctrl\",\"s\"])"}
	action := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"type":   map[string]any{"type": "string", "enum": actions.Types()},
			"x":      xy,
			"y":      xy,
			"button": map[string]any{"type": "string", "enum": []string{"left", "right", "middle", "wheel", "back", "forward"}},
			"keys":   keys,
			"path": map[string]any{"type": "array", "minItems": 2, "maxItems": actions.MaxPathLen, "items": map[string]any{
				"type": "object", "properties": map[string]any{"x": xy, "y": xy}, "required": []string{"x", "y"}, "additionalProperties": false}},
			"scroll_x": map[string]any{"type": "integer", "description": "pixels, negative scrolls left"},
			"scroll_y": map[string]any{"type": "integer", "description": "pixels, negative scrolls up"},
			"text":     map[string]any{"type": "string", "description": "any Unicode text, typed exactly"},
		},
		"required":             []string{"type"},
		"additionalProperties": false,
	}
	size := "the screenshot's"
	if v.Width > 0 {
		size = fmt.Sprintf("at most %dx%d, fitted to the screen's aspect", v.Width, v.Height)
	}
	return &mcp.Tool{
		Name:  ComputerToolName,
		Title: "Computer (isolated desktop)",
		Description: "Perform actions on an isolated Linux desktop, in order, then return a screenshot taken once the screen " +
			"has settled (PNG, " + size + ") and a short text of what ran. Coordinates are pixels of the last screenshot. " +
			"Fields per type: click x,y[,button][,keys]; double_click x,y[,keys]; drag path[,keys]; keypress keys; " +
			"move x,y[,keys]; scroll x,y,scroll_x,scroll_y[,keys]; type text; wait; screenshot. The whole call is checked " +
			"before anything runs: an invalid action (unknown key, point off the image, extra field) fails the call with " +
			"nothing performed.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"actions": map[string]any{"type": "array", "minItems": 1, "items": action},
			},
			"required":             []string{"actions"},
			"additionalProperties": false,
		},
		Annotations: &mcp.ToolAnnotations{Title: "Computer", OpenWorldHint: ptr(true)},
	}
}

func ptr[T any](v T) *T { return &v }

// decodeCall reads a call's arguments strictly: one object holding exactly
// "actions", each action decoded as the computer tool's (actions.Decode).
// It is the call's only decoding: the runner checks the decoded actions.
func decodeCall(args json.RawMessage) ([]actions.Action, error) {
	var in struct {
		Actions []json.RawMessage `json:"actions"`
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("the arguments must be {\"actions\": [...]}: %w", err)
	}
	if dec.More() {
		return nil, errors.New("text after the arguments object")
	}
	if len(in.Actions) == 0 {
		return nil, errors.New(`"actions" is missing or empty`)
	}
	as := make([]actions.Action, len(in.Actions))
	for i, raw := range in.Actions {
		a, err := actions.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("action %d: %w", i, err)
		}
		as[i] = a
	}
	return as, nil
}

// computer runs one call of the computer tool.
func (x *session) computer(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	as, err := decodeCall(req.Params.Arguments)
	if err != nil {
		return errorResult("invalid input, nothing was performed: " + err.Error())
	}
	steps := summaries(as)
	elicited := x.srv.cfg.Confirm && elicits(req)
	if elicited {
		if res := x.elicitCall(req, callQuestion(steps)); res != nil {
			return res
		}
	}
	return x.runCall(ctx, steps, func(callID string) *mcp.CallToolResult {
		prog := startProgress(ctx, req, len(as))
		opts := runner.CallOptions{ImageSpace: x.image}
		switch {
		case elicited:
			x.approvedEvents(callID, len(as)+1)
		case x.srv.cfg.Confirm:
			opts.BeforeAction = x.confirmer()
		}
		shot, err := x.ts.ExecuteShot(ctx, callID, as, opts, func(e runner.Event) {
			x.event(e)
			if e.Kind == runner.EventAction && e.Action != nil {
				prog.step(ctx, e.Action.Summary)
			}
		})
		prog.end()
		if errors.Is(err, computer.ErrTakenOver) {
			return x.takenResult(ctx, callID, steps, err)
		}
		if err != nil {
			return errorResult(failure(ctx, err))
		}
		x.image = shot.Transform.Image
		return screenshotResult(shot, ranText(steps, shot))
	})
}

func screenshotResult(shot computer.Screenshot, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.ImageContent{Data: shot.PNG, MIMEType: "image/png"},
		&mcp.TextContent{Text: text},
	}}
}

// ranText says what a call did, from its steps in short (summaries).
func ranText(steps []string, shot computer.Screenshot) string {
	var b strings.Builder
	b.WriteString("ran: " + strings.Join(steps, "; "))
	t := shot.Transform
	fmt.Fprintf(&b, ". Screenshot %dx%d (the screen is %dx%d); coordinates are its pixels.", t.Image.W, t.Image.H, t.Screen.W, t.Screen.H)
	return b.String()
}

// summaries are the actions in short (typed text by its length only).
func summaries(as []actions.Action) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}
