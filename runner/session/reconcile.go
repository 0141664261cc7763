package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentd-dev/agentd/runner"
)

// ParseReconcile checks a --reconcile value.
func ParseReconcile(v string) (runner.Reconciliation, error) {
	switch r := runner.Reconciliation(v); r {
	case "", runner.Done, runner.NotDone:
		return r, nil
	}
	return "", fmt.Errorf("--reconcile %q: use done (the action's effects show on the desktop) or not-done (they do not: run it again)", v)
}

// Reconcile settles the call the checkpoint left uncertain, if any: the
// answer given (--reconcile), else that of the person asked by ask (when
// interactive), shown the call and the last screenshot. Without either it
// refuses: the call must not run again, nor be taken as done, on nobody's
// word. What it settles on is said on out.
func (s *Session) Reconcile(ctx context.Context, given runner.Reconciliation, ask Asker, interactive bool, out io.Writer) (runner.Reconciliation, error) {
	u := s.Uncertain
	if u == nil {
		if given != "" {
			fmt.Fprintf(out, "no action of the checkpoint is uncertain; --reconcile %s is not used\n", given)
		}
		return "", nil
	}
	what := describeUncertain(u)
	if given != "" {
		fmt.Fprintf(out, "uncertain: %s; --reconcile %s\n", runner.Printable(what), given)
		return given, nil
	}
	shot := "none recorded"
	if s.LastShot != "" {
		shot = s.LastShot
	}
	if !interactive {
		return "", fmt.Errorf("--resume: %s; it may or may not have run. Check the desktop (the last screenshot: %s) and resume with --reconcile done or --reconcile not-done (no terminal to ask on)",
			runner.Printable(what), shot)
	}
	q := fmt.Sprintf("\nThe run stopped while %s.\nIt may or may not have run. The last screenshot: %s\nCheck the desktop. Were the action's effects performed (done)? [y/N] ", what, shot)
	done, err := ask(ctx, q)
	if err != nil {
		return "", fmt.Errorf("--resume: %w", err)
	}
	if done {
		return runner.Done, nil
	}
	again, err := ask(ctx, "Then it did not run: run it again (not-done)? [y/N] ")
	if err != nil {
		return "", fmt.Errorf("--resume: %w", err)
	}
	if !again {
		return "", errors.New("--resume: the uncertain action was not reconciled; nothing was resumed")
	}
	return runner.NotDone, nil
}

// describeUncertain says what the uncertain call was doing.
func describeUncertain(u *runner.Uncertain) string {
	var what string
	switch {
	case len(u.Actions) > 0:
		s := make([]string, len(u.Actions))
		for i, a := range u.Actions {
			s[i] = a.String()
		}
		what = "performing " + strings.Join(s, ", ")
	case u.Name != "":
		what = fmt.Sprintf("calling %s(%s)", u.Name, u.Arguments)
	default:
		what = "running a " + u.Type
	}
	return fmt.Sprintf("call %s of step %d was %s", u.CallID, u.Step, what)
}
