package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// Output is what a function tool returns to the model: text, images, or
// both (sent as input_text and input_image content).
type Output struct {
	Text   string
	Images []Image
}

// Image is an image in a function's output: a URL (https, or a data URL of
// a PNG, JPEG, WebP or GIF) or a file id, and a detail ("" is auto).
type Image struct {
	URL    string
	FileID string
	Detail string // "", "low", "high", "auto" or "original"
}

// Text is an Output of text only.
func Text(s string) Output { return Output{Text: s} }

// Function is a typed function tool: a Go function with a strict JSON
// schema. The model's arguments are checked against the schema and decoded
// strictly before the function runs; invalid arguments stop the run with
// nothing of the response executed. The function gets the run's context; a
// function error, a panic or an invalid output stops the run, and nothing is
// repeated.
type Function struct {
	name        string
	description string
	schema      map[string]any
	// bind decodes and validates arguments into a call of the Go function.
	bind        func(args json.RawMessage) (func(context.Context) (Output, error), error)
	replaceable bool
	independent bool
}

// FunctionOption configures a Function.
type FunctionOption func(*Function) error

// WithSchema replaces the schema derived from the argument type by an
// explicit one. It must be strict: every object requires all its
// properties and sets additionalProperties to false.
func WithSchema(schema map[string]any) FunctionOption {
	return func(f *Function) error {
		if err := checkStrict("parameters", schema); err != nil {
			return fmt.Errorf("the schema is not strict: %w", err)
		}
		f.schema = schema
		return nil
	}
}

// Replaceable lets RunControl.SupplyOutputs answer a call of this function
// in its place, before the call is attempted.
func Replaceable() FunctionOption {
	return func(f *Function) error { f.replaceable = true; return nil }
}

// Independent marks a function that does not depend on any other call: with
// Streaming.Eager and no ledger, its early calls may run at the same time as
// other independent calls while the response goes on arriving (at most
// Streaming.MaxConcurrentCalls at once). The function must itself bound
// the work it starts.
func Independent() FunctionOption {
	return func(f *Function) error { f.independent = true; return nil }
}

var functionName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// NewFunction registers fn as the function tool name. A is its arguments'
// type, a struct; its strict schema is derived with SchemaOf unless
// WithSchema gives one. A value of A that has a Validate() error method is
// validated after decoding, before fn runs.
func NewFunction[A any](name, description string, fn func(ctx context.Context, args A) (Output, error), opts ...FunctionOption) (*Function, error) {
	if !functionName.MatchString(name) {
		return nil, fmt.Errorf("function name %q: use 1 to 64 letters, digits, _ or -", name)
	}
	if fn == nil {
		return nil, fmt.Errorf("function %s: no Go function given", name)
	}
	f := &Function{name: name, description: description}
	for _, o := range opts {
		if err := o(f); err != nil {
			return nil, fmt.Errorf("function %s: %w", name, err)
		}
	}
	if f.schema == nil {
		s, err := SchemaOf(reflect.TypeFor[A]())
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", name, err)
		}
		f.schema = s
	}
	f.bind = func(raw json.RawMessage) (func(context.Context) (Output, error), error) {
		var args A
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&args); err != nil {
			return nil, err
		}
		if v, ok := any(args).(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				return nil, err
			}
		}
		return func(ctx context.Context) (Output, error) { return fn(ctx, args) }, nil
	}
	return f, nil
}

// Name is the function's name as the model calls it.
func (f *Function) Name() string { return f.name }

// Params declares the function as a strict function tool.
func (f *Function) Params() []responses.ToolUnionParam {
	p := responses.FunctionToolParam{Name: f.name, Parameters: f.schema, Strict: openai.Bool(true)}
	if f.description != "" {
		p.Description = openai.String(f.description)
	}
	return []responses.ToolUnionParam{{OfFunction: &p}}
}

// Claims takes the function calls of this function.
func (f *Function) Claims(item responses.ResponseOutputItemUnion) bool {
	return item.Type == "function_call" && item.Name == f.name && item.Namespace == ""
}

// Prepare checks the call's arguments against the schema. Decoding into
// the Go type happens too, so nothing runs unless every call is valid.
func (f *Function) Prepare(_ *Step, item responses.ResponseOutputItemUnion) (Call, error) {
	fc := item.AsFunctionCall()
	bad := func(err error) error {
		return &BadInputError{CallID: fc.CallID, Index: -1, Err: fmt.Errorf("function %s: %w", f.name, err)}
	}
	if fc.CallID == "" {
		return nil, bad(errors.New("the call has no call_id"))
	}
	if fc.Status != "" && fc.Status != responses.ResponseFunctionToolCallStatusCompleted {
		return nil, bad(fmt.Errorf("the call's status is %q, not completed", fc.Status))
	}
	v, err := decodeJSON([]byte(fc.Arguments))
	if err != nil {
		return nil, bad(fmt.Errorf("arguments are not JSON: %w", err))
	}
	if err := validate("arguments", f.schema, v); err != nil {
		return nil, bad(err)
	}
	run, err := f.bind(json.RawMessage(fc.Arguments))
	if err != nil {
		return nil, bad(fmt.Errorf("arguments: %w", err))
	}
	return &functionCall{f: f, callID: fc.CallID, run: run}, nil
}

// functionCall is a validated call of a Function.
type functionCall struct {
	f      *Function
	callID string
	run    func(context.Context) (Output, error)
}

// Independent: made with the Independent option.
func (p *functionCall) Independent() bool { return p.f.independent }

// AnswerDone answers the call reconciled as done (DoneOutput).
func (p *functionCall) AnswerDone(_ context.Context, s *Step) (responses.ResponseInputItemUnionParam, error) {
	return DoneOutput(s, p.callID), nil
}

func (c *functionCall) CallID() string { return c.callID }

// Approve: a function tool asks no consent; the application decides what
// its functions may do.
func (c *functionCall) Approve(context.Context, *Step) error { return nil }

func (c *functionCall) Execute(ctx context.Context, s *Step) (responses.ResponseInputItemUnionParam, error) {
	var zero responses.ResponseInputItemUnionParam
	start := time.Now()
	out, supplied := s.x.ctl.take(c.callID)
	var err error
	if !supplied {
		s.Attempted(c.callID)
		out, err = c.call(ctx)
	}
	if err == nil {
		err = checkOutput(out)
		if err != nil {
			err = fmt.Errorf("invalid output: %w", err)
		}
	}
	ev := &FunctionEvent{Name: c.f.name, Supplied: supplied}
	if err != nil {
		// Never the error's text: it may hold the function's private data.
		ev.Error = "failed"
	}
	s.Event(Event{Kind: EventFunction, CallID: c.callID, Duration: Duration(time.Since(start)), Function: ev})
	if err != nil {
		return zero, &FunctionError{Name: c.f.name, CallID: c.callID, Err: withCtx(ctx, err)}
	}
	s.Completed(c.callID)
	return functionOutput(c.callID, out), nil
}

// call runs the function, turning a panic into an error.
func (c *functionCall) call(ctx context.Context) (out Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	return c.run(ctx)
}

// FunctionError says a function tool failed, panicked or returned an
// invalid output. The function ran (it may have had effects); nothing is
// repeated.
type FunctionError struct {
	Name   string
	CallID string
	Err    error
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function %s (call %s): %v", e.Name, e.CallID, e.Err)
}

func (e *FunctionError) Unwrap() error { return e.Err }

// checkOutput validates a function's output before it is sent.
func checkOutput(o Output) error {
	if !utf8.ValidString(o.Text) {
		return errors.New("the text is not valid UTF-8")
	}
	if o.Text == "" && len(o.Images) == 0 {
		return errors.New("it is empty: return text, images or both")
	}
	for i, img := range o.Images {
		switch img.Detail {
		case "", "low", "high", "auto", "original":
		default:
			return fmt.Errorf("image %d: unknown detail %q", i, img.Detail)
		}
		switch {
		case img.URL == "" && img.FileID == "":
			return fmt.Errorf("image %d has neither a URL nor a file id", i)
		case img.URL != "" && !imageURL(img.URL):
			return fmt.Errorf("image %d: the URL is neither https nor a data URL of a PNG, JPEG, WebP or GIF", i)
		}
	}
	return nil
}

func imageURL(u string) bool {
	if strings.HasPrefix(u, "https://") {
		return true
	}
	for _, t := range []string{"png", "jpeg", "webp", "gif"} {
		if strings.HasPrefix(u, "data:image/"+t+";base64,") {
			return true
		}
	}
	return false
}

// functionOutput is the function_call_output answering callID: plain text,
// or input_text then input_image content.
func functionOutput(callID string, o Output) responses.ResponseInputItemUnionParam {
	out := responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String(callID)}
	if len(o.Images) == 0 {
		out.Output.OfString = openai.String(o.Text)
		return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &out}
	}
	var parts responses.ResponseFunctionCallOutputItemListParam
	if o.Text != "" {
		parts = append(parts, responses.ResponseFunctionCallOutputItemUnionParam{
			OfInputText: &responses.ResponseInputTextContentParam{Text: o.Text}})
	}
	for _, img := range o.Images {
		p := responses.ResponseInputImageContentParam{}
		if img.URL != "" {
			p.ImageURL = openai.String(img.URL)
		}
		if img.FileID != "" {
			p.FileID = openai.String(img.FileID)
		}
		if img.Detail != "" {
			p.Detail = responses.ResponseInputImageContentDetail(img.Detail)
		}
		parts = append(parts, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &p})
	}
	out.Output.OfResponseFunctionCallOutputItemArray = parts
	return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &out}
}
