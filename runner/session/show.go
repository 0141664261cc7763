package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/runner"
)

// Progress prints a run's events on w for a person watching: made
// printable, since ids and summaries may come from the model.
func Progress(w io.Writer) func(runner.Event) {
	return func(e runner.Event) { progress(w, e) }
}

func progress(w io.Writer, e runner.Event) {
	switch e.Kind {
	case runner.EventRequest:
		fmt.Fprintf(w, "step %d/%d: asking the model\n", e.Step, e.MaxSteps)
	case runner.EventResponse:
		what := "no local call"
		if len(e.CallIDs) > 0 {
			what = "calls " + runner.Printable(strings.Join(e.CallIDs, ", "))
		}
		fmt.Fprintf(w, "  answer in %s: %s\n", round(e.Duration), what)
	case runner.EventApprovalAnswered:
		verdict := "refused (" + e.Approval.Reason + ")"
		if e.Approval.Approved {
			verdict = "approved"
		}
		fmt.Fprintf(w, "  %s: %s\n", strings.ReplaceAll(e.Approval.Kind, "_", " "), verdict)
	case runner.EventAction:
		if e.Action.Error != "" {
			fmt.Fprintf(w, "  %-40s FAILED after %s: %s\n", runner.Printable(e.Action.Summary), round(e.Duration), runner.Printable(e.Action.Error))
			return
		}
		fmt.Fprintf(w, "  %-40s %s\n", runner.Printable(e.Action.Summary), round(e.Duration))
	case runner.EventCode:
		c := e.Code
		what := fmt.Sprintf("exec_py %d lines: %d B output, %d images", c.Lines, c.OutputBytes, c.Images)
		if c.Raised {
			what += ", raised"
		}
		if c.Lost {
			what += ", namespace lost (" + c.Stopped + ")"
		}
		fmt.Fprintf(w, "  %-40s %s\n", what, round(e.Duration))
	case runner.EventFunction:
		status := "done"
		if e.Function.Error != "" {
			status = "FAILED"
		}
		fmt.Fprintf(w, "  %-40s %s %s\n", "function "+runner.Printable(e.Function.Name), status, round(e.Duration))
	case runner.EventTakeover:
		tk := e.Takeover
		if tk.Phase == runner.TakeoverPaused {
			fmt.Fprintf(w, "  a person holds the desktop: paused, %d action(s) of the call not run\n", len(tk.NotRun))
			return
		}
		fmt.Fprintf(w, "  handed back by %s after %d action(s) of theirs\n", runner.Printable(strings.Join(tk.By, ", ")), len(tk.Actions)+tk.More)
	case runner.EventScreenshot:
		img := e.Screenshot.Transform.Image
		fmt.Fprintf(w, "  %-40s %s\n", fmt.Sprintf("screenshot %dx%d, %d KB", img.W, img.H, (e.Screenshot.Bytes+1023)/1024), round(e.Duration))
	}
}

func round(d runner.Duration) time.Duration {
	if time.Duration(d) < time.Millisecond {
		return time.Duration(d).Round(time.Microsecond)
	}
	return time.Duration(d).Round(time.Millisecond)
}

// StreamText prints the model's text to w as it arrives (made printable:
// the model's text never reaches the terminal as control sequences), a
// line break after each text part.
func StreamText(w io.Writer) *runner.Streaming {
	return &runner.Streaming{OnEvent: func(ev responses.ResponseStreamEventUnion) {
		switch ev.Type {
		case "response.output_text.delta":
			fmt.Fprint(w, runner.Printable(ev.Delta))
		case "response.output_text.done":
			fmt.Fprintln(w)
		}
	}}
}

// Explain adds to a failed run's error what a user needs to act on it.
func Explain(ctx context.Context, err error) error {
	var apiErr *openai.Error
	switch {
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("cancelled: %w; an action already sent cannot be undone: check the desktop before retrying", err)
	case errors.Is(err, runner.ErrStepLimit):
		return fmt.Errorf("%w (raise --max-steps to allow more)", err)
	case errors.As(err, &apiErr) && apiErr.Message != "":
		return fmt.Errorf("%w: %s", err, apiErr.Message)
	}
	return err
}

// Tokens says a run's token usage.
func Tokens(u runner.Totals) string {
	s := fmt.Sprintf("%d in, %d out, %d total", u.InputTokens, u.OutputTokens, u.TotalTokens)
	if u.Incomplete {
		s += " (incomplete: a response carried no usage)"
	}
	return s
}
