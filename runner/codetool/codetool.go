// Package codetool is code mode's one tool (docs/design.md, "Code-execution
// mode"): exec_py, the model's Python run in the guest's code worker
// (agentd --code), answered with its text and its images.
package codetool

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/computer"
)

// Name is the function tool of code mode.
const Name = "exec_py"

// DefaultDescription tells the model what code mode offers, after the
// source document's.
const DefaultDescription = "Run Python in a persistent desktop. Variables persist across calls. " +
	"PyAutoGUI operations are synchronous. Available: pyautogui, time, log(value), and display(PIL_image). " +
	"Inspect the screen with display(pyautogui.screenshot()) before acting. Use screenshot coordinates " +
	"and check the screen after a short group of actions. Keep screenshots in memory and PyAutoGUI's " +
	"fail-safe enabled. A call that runs past its time limit is stopped, and its variables are lost: " +
	"the output says so."

// Runner runs Python in the guest's code worker; *guest.Client is one
// (agentd --code).
type Runner interface {
	Exec(ctx context.Context, code string, deadline time.Duration) (wire.ExecResult, error)
}

// CallInfo is what BeforeCode is shown: its own copy.
type CallInfo struct {
	CallID string
	Code   string
}

// Options configure the code tool.
type Options struct {
	// Deadline bounds each call (0: agentd's default, 60 s).
	Deadline time.Duration
	// BeforeCode, if set, is asked before each call runs, with the code;
	// only exactly true approves, anything else stops the run before the
	// call runs.
	BeforeCode func(ctx context.Context, call CallInfo) (any, error)
	// Description replaces DefaultDescription.
	Description string
	// Resumed says the run goes on after a resume, in a code worker new to
	// it: the first call's fresh namespace is news to the model.
	Resumed bool
}

// New returns the exec_py function tool over r: the model's code runs in
// the guest, and each call is answered with its text and its images at
// detail "original".
func New(r Runner, opts Options) runner.Tool {
	if opts.Description == "" {
		opts.Description = DefaultDescription
	}
	return &codeTool{r: r, opts: opts}
}

type codeTool struct {
	r     Runner
	opts  Options
	calls int // calls run so far, so a fresh namespace after the first is news
}

func (c *codeTool) Params() []responses.ToolUnionParam {
	return []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
		Name:        Name,
		Description: openai.String(c.opts.Description),
		Strict:      openai.Bool(true),
		Parameters: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"code": map[string]any{"type": "string"}},
			"required":             []string{"code"},
			"additionalProperties": false,
		},
	}}}
}

func (c *codeTool) Claims(item responses.ResponseOutputItemUnion) bool {
	return item.Type == "function_call" && item.Name == Name
}

// Prepare reads the arguments strictly: one object with exactly a string
// "code".
func (c *codeTool) Prepare(_ *runner.Step, item responses.ResponseOutputItemUnion) (runner.Call, error) {
	fc := item.AsFunctionCall()
	var args struct {
		Code *string `json:"code"`
	}
	dec := json.NewDecoder(strings.NewReader(fc.Arguments))
	dec.DisallowUnknownFields()
	err := dec.Decode(&args)
	if err == nil && dec.More() {
		err = errors.New("text after the arguments object")
	}
	if err == nil && args.Code == nil {
		err = errors.New(`missing "code"`)
	}
	if err != nil {
		return nil, &runner.BadInputError{CallID: fc.CallID, Index: -1, Err: fmt.Errorf("%s arguments: %w", Name, err)}
	}
	return &codeCall{tool: c, callID: fc.CallID, code: *args.Code}, nil
}

type codeCall struct {
	tool   *codeTool
	callID string
	code   string
}

func (p *codeCall) CallID() string { return p.callID }

// AnswerDone answers the call reconciled as done (runner.DoneOutput).
func (p *codeCall) AnswerDone(_ context.Context, s *runner.Step) (responses.ResponseInputItemUnionParam, error) {
	return runner.DoneOutput(s, p.callID), nil
}

func (p *codeCall) Approve(ctx context.Context, s *runner.Step) error {
	f := p.tool.opts.BeforeCode
	if f == nil {
		return nil
	}
	summary := fmt.Sprintf("%s, %d lines", Name, lines(p.code))
	info := CallInfo{CallID: p.callID, Code: p.code}
	return s.Ask(ctx, p.callID, runner.ApprovalEvent{Kind: runner.ApprovalCode, Index: -1, Summary: summary},
		func() (any, error) { return f(ctx, info) })
}

func (p *codeCall) Execute(ctx context.Context, s *runner.Step) (responses.ResponseInputItemUnionParam, error) {
	var zero responses.ResponseInputItemUnionParam
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("cancelled before call %s: %w", p.callID, err)
	}
	s.Attempted(p.callID)
	start := time.Now()
	res, err := p.tool.r.Exec(ctx, p.code, p.tool.opts.Deadline)
	took := time.Since(start)
	first := p.tool.calls == 0 && !p.tool.opts.Resumed
	p.tool.calls++
	refused := errors.Is(err, computer.ErrTakenOver)
	if err != nil && !refused {
		return zero, fmt.Errorf("call %s (%s): %w", p.callID, Name, err)
	}
	var handedBack string
	if refused || res.Stopped == StoppedTakenOver {
		if handedBack, err = p.awaitHandback(ctx, s, refused); err != nil {
			return zero, err
		}
		if refused {
			res = wire.ExecResult{Output: "[not run: a person held the desktop when this call came; nothing of it ran, the namespace is kept]\n"}
		}
	}
	s.Event(runner.Event{Kind: runner.EventCode, CallID: p.callID, Duration: runner.Duration(took), Code: &runner.CodeEvent{
		Lines: lines(p.code), OutputBytes: len(res.Output), Images: len(res.Images), Raised: res.Traceback != "",
		Fresh: res.FreshNamespace, Lost: res.NamespaceLost, Stopped: res.Stopped}})
	content := responses.ResponseFunctionCallOutputItemListParam{{OfInputText: &responses.ResponseInputTextContentParam{Text: OutputText(res, first) + handedBack}}}
	for _, im := range res.Images {
		content = append(content, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{
			ImageURL: openai.String("data:image/png;base64," + base64.StdEncoding.EncodeToString(im.PNG)),
			Detail:   responses.ResponseInputImageContentDetailOriginal,
		}})
	}
	s.Completed(p.callID)
	return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: openai.String(p.callID),
		Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfResponseFunctionCallOutputItemArray: content},
	}}, nil
}

// StoppedTakenOver is wire.ExecResult.Stopped of a call a person's take
// over stopped.
const StoppedTakenOver = "taken_over"

// awaitHandback is a code call a person's take over stopped (or refused):
// the run waits for the hand back, records both moments as takeover
// events, and returns what the model is told after the call's output.
// Without a runner that can wait (computer.Overseen), a refusal stays an
// error and a stopped call is answered as it is.
func (p *codeCall) awaitHandback(ctx context.Context, s *runner.Step, refused bool) (string, error) {
	o, ok := p.tool.r.(computer.Overseen)
	if !ok {
		if refused {
			return "", fmt.Errorf("call %s (%s): %w", p.callID, Name, computer.ErrTakenOver)
		}
		return "", nil
	}
	ev := &runner.TakeoverEvent{Phase: runner.TakeoverPaused}
	s.Event(runner.Event{Kind: runner.EventTakeover, CallID: p.callID, Takeover: ev})
	hb, err := o.AwaitHandback(ctx)
	if err != nil {
		return "", fmt.Errorf("call %s: waiting for the person to hand the desktop back: %w", p.callID, withCtx(ctx, err))
	}
	back := *ev
	back.Phase, back.Handback = runner.TakeoverHandedBack, hb
	s.Event(runner.Event{Kind: runner.EventTakeover, CallID: p.callID, Takeover: &back})
	var b strings.Builder
	b.WriteString("[a person took over the desktop during this call and has handed it back to you")
	if n := len(hb.Actions) + hb.More; n > 0 {
		fmt.Fprintf(&b, "; they performed %d action(s) on it", n)
	}
	b.WriteString(". The screen may have changed: look at it (display(pyautogui.screenshot())) before you act again]\n")
	for _, n := range hb.Notes {
		fmt.Fprintf(&b, "[the person's note: %s]\n", n)
	}
	return b.String(), nil
}

// HandedBack: the code tool answers a take over before a final message
// with a user message saying so, and the person's notes; the model looks
// at the desktop through its code, as after any call.
func (c *codeTool) HandedBack(ctx context.Context, s *runner.Step) (responses.ResponseInputItemUnionParam, bool, error) {
	var zero responses.ResponseInputItemUnionParam
	w, ok := c.r.(computer.Watched)
	if !ok {
		return zero, false, nil
	}
	hb, err := runner.AwaitFinalHandback(ctx, s, w, false)
	if err != nil || hb.Leases == 0 {
		return zero, false, err
	}
	text := runner.FinalTakeoverText(hb, "The screen may have changed: look at it (display(pyautogui.screenshot())) before you act again or finish.")
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser), true, nil
}

// OutputText is what the model reads of a code call: the output, the
// traceback, and what happened to the namespace. first says whether the
// call was the run's first (whose namespace is fresh as a matter of course).
func OutputText(res wire.ExecResult, first bool) string {
	var b bytes.Buffer
	if res.FreshNamespace && !first {
		b.WriteString("[this call ran in a fresh namespace: the variables of earlier calls are gone]\n")
	}
	b.WriteString(res.Output)
	if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
		b.WriteByte('\n')
	}
	if res.Traceback != "" {
		b.WriteString(res.Traceback)
	}
	if len(res.Released) > 0 {
		fmt.Fprintf(&b, "[released at the end of the call: %s]\n", strings.Join(res.Released, ", "))
	}
	if res.NamespaceLost {
		b.WriteString("[the namespace is lost: the next call starts with no variables]\n")
	}
	if b.Len() == 0 {
		b.WriteString("[no output]\n")
	}
	return b.String()
}

func lines(code string) int {
	if code == "" {
		return 0
	}
	return strings.Count(strings.TrimRight(code, "\n"), "\n") + 1
}

func withCtx(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w: %w", ctxErr, err)
	}
	return err
}
