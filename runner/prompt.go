package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode"
)

// IsTerminal reports whether f is a terminal (not a pipe, a file or
// /dev/null).
func IsTerminal(f *os.File) bool { return isTerminal(f.Fd()) }

// ErrNoTerminal is the refusal of a TerminalApprover whose input is not a
// terminal: nobody is there to approve.
var ErrNoTerminal = errors.New("pending safety checks need a person to approve them, and standard input is not a terminal")

// TerminalApprover asks a person at a terminal to approve pending safety
// checks, answering y or N. It never approves without an explicit "y" or
// "yes": an empty line, end of input, anything else or cancellation refuses.
type TerminalApprover struct {
	in          io.Reader
	out         io.Writer
	interactive bool
	// flush drops typed-ahead input on a real terminal (nil in tests).
	flush func()

	once  sync.Once
	lines chan string
}

// NewTerminalApprover asks on out and reads answers from in. If in is not a
// terminal, every approval is refused with ErrNoTerminal without asking.
func NewTerminalApprover(in *os.File, out io.Writer) *TerminalApprover {
	return &TerminalApprover{in: in, out: out, interactive: IsTerminal(in), flush: func() { discardTypeahead(in.Fd()) }}
}

// ApproveSafetyChecks fits CallOptions.ApproveSafetyChecks.
func (p *TerminalApprover) ApproveSafetyChecks(ctx context.Context, call CallInfo, checks []SafetyCheck) (any, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe model's next actions (call %s) raised safety checks:\n", call.CallID)
	for _, c := range checks {
		fmt.Fprintf(&b, "  - %s: %s\n", c.Code, c.Message)
	}
	summaries := make([]string, len(call.Actions))
	for i, a := range call.Actions {
		summaries[i] = a.String()
	}
	fmt.Fprintf(&b, "They would run: %s\nApprove and run them? [y/N] ", strings.Join(summaries, ", "))
	return p.Ask(ctx, b.String())
}

// ApproveAction fits CallOptions.BeforeAction: it asks about the one
// action about to run, shown among its call's actions.
func (p *TerminalApprover) ApproveAction(ctx context.Context, a ActionInfo) (any, error) {
	what := a.Action.String()
	if a.IsFinalScreenshot {
		what = "the final screenshot"
	}
	summaries := make([]string, len(a.Actions))
	for i, x := range a.Actions {
		summaries[i] = x.String()
	}
	return p.Ask(ctx, fmt.Sprintf("\nThe model's call %s (%s) would now run action %d: %s\nRun it? [y/N] ",
		a.CallID, strings.Join(summaries, ", "), a.Index+1, what))
}

// Ask asks a person a yes/no question (shown through Printable) and
// approves only on "y" or "yes". Without a terminal it refuses with
// ErrNoTerminal, without asking.
func (p *TerminalApprover) Ask(ctx context.Context, question string) (bool, error) {
	if !p.interactive {
		return false, ErrNoTerminal
	}
	p.once.Do(p.startReader)
	// Lines typed before the question are not answers to it: drop what the
	// terminal holds and what the reader already read (best effort).
	if p.flush != nil {
		p.flush()
	}
	for drained := false; !drained; {
		select {
		case _, ok := <-p.lines:
			drained = !ok
		default:
			drained = true
		}
	}
	// Everything shown comes from the API or the model: keep it from
	// driving the terminal.
	if _, err := io.WriteString(p.out, Printable(question)); err != nil {
		return false, fmt.Errorf("asking for approval: %w", err)
	}
	select {
	case line, ok := <-p.lines:
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if !ok {
			return false, errors.New("no answer: end of input")
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true, nil
		}
		return false, nil
	case <-ctx.Done():
		if cause := context.Cause(ctx); cause != ctx.Err() {
			// The run withdrew the question and said why.
			fmt.Fprintf(p.out, "\nwithdrawn: %s\n", Printable(cause.Error()))
		} else {
			fmt.Fprintln(p.out)
		}
		return false, ctx.Err()
	}
}

// startReader reads answers in the background so a question can be
// abandoned when the run is cancelled; the goroutine ends at end of input.
func (p *TerminalApprover) startReader() {
	p.lines = make(chan string)
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(p.in)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
}

// Printable keeps text from the API or the model from driving a terminal:
// control characters other than newline and tab (escape sequences
// included) are shown as U+FFFD.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}
