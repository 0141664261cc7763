package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentd-dev/agentd/internal/statedir"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/ledger"
)

// ledgerDir is where the run id keeps its checkpoints: outside its record,
// in the user's private state directory (~/.local/state/agentd/runs/<id>),
// since a checkpoint holds the model's responses verbatim (typed text, the
// model's code) and the record must not.
func ledgerDir(id string) (string, error) {
	if !runIDPattern.MatchString(id) {
		return "", fmt.Errorf("run id %q is not one agentctl makes", id)
	}
	root, err := statedir.State("agentd")
	if err != nil {
		return "", err
	}
	runs := filepath.Join(root, "runs")
	if err := statedir.Ensure(runs); err != nil {
		return "", err
	}
	return filepath.Join(runs, id), nil
}

// runIDPattern is a run id as agentctl makes it (the record folder's
// name); the id read back from a record names a folder, so nothing else
// is taken.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// startNote is what the first run of a record noted at its start.
type startNote struct {
	// RunID names the run's checkpoints (ledgerDir); a record of an
	// agentctl that kept them inside it has none.
	RunID    string `json:"run_id"`
	Task     string `json:"task"`
	Model    string `json:"model"`
	Mode     string `json:"mode"`
	MaxSteps int    `json:"max_steps"`
	// ContextImages and ContextBytes are the run's context budget.
	ContextImages int `json:"context_images"`
	ContextBytes  int `json:"context_bytes"`
	// View is the --view the model's screenshots were made in (absent in
	// records from before it was noted: the checkpoint's image space then).
	View    string `json:"view"`
	Confirm bool   `json:"confirm"`
	Stream  bool   `json:"stream"`
	Eager   bool   `json:"eager"`
	// lastShot is the path of the last screenshot the record holds.
	lastShot string
}

// resumable reads the record in dir for a resume: its start note (with the
// last screenshot written), and whether a run in it already finished well.
// It holds the run's ledger (refused if another process does) and returns
// its newest checkpoint.
func resumable(dir string) (startNote, *ledger.File, *runner.Checkpoint, error) {
	var start startNote
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return start, nil, nil, fmt.Errorf("--resume: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	found := false
	for sc.Scan() {
		var line struct {
			Kind       string          `json:"kind"`
			OK         bool            `json:"ok"`
			Data       json.RawMessage `json:"data"`
			Screenshot *struct {
				File string `json:"file"`
			} `json:"screenshot"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue // a line torn by the crash
		}
		if line.Screenshot != nil && line.Screenshot.File != "" {
			start.lastShot = filepath.Join(dir, line.Screenshot.File)
		}
		switch {
		case line.Kind == "start" && !found:
			found = json.Unmarshal(line.Data, &start) == nil
		case line.Kind == "end" && line.OK:
			return start, nil, nil, fmt.Errorf("--resume %s: the run already finished", dir)
		}
	}
	if err := sc.Err(); err != nil {
		return start, nil, nil, fmt.Errorf("--resume: reading %s: %w", f.Name(), err)
	}
	if !found {
		return start, nil, nil, fmt.Errorf("--resume %s: the record has no start line", dir)
	}
	if start.RunID == "" {
		if _, err := os.Stat(filepath.Join(dir, "ledger")); err == nil {
			return start, nil, nil, fmt.Errorf("--resume %s: an older agentctl kept this run's checkpoints in its record (ledger/, which holds typed text); it cannot be resumed: delete that folder", dir)
		}
		return start, nil, nil, fmt.Errorf("--resume %s: the record names no checkpoints", dir)
	}
	ld, err := ledgerDir(start.RunID)
	if err != nil {
		return start, nil, nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	if _, err := os.Stat(ld); err != nil {
		return start, nil, nil, fmt.Errorf("--resume %s: the run kept no checkpoints: %w", dir, err)
	}
	led, err := ledger.Open(ld)
	if err != nil {
		return start, nil, nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	data, seq, err := led.Last()
	if err == nil {
		var cp *runner.Checkpoint
		if cp, err = runner.LoadCheckpoint(data); err == nil {
			return start, led, cp, nil
		}
	}
	led.Close()
	if errors.Is(err, ledger.ErrNone) {
		return start, nil, nil, fmt.Errorf("--resume %s: no checkpoint to resume from (the run stopped before its first request)", dir)
	}
	return start, nil, nil, fmt.Errorf("--resume %s: checkpoint %d: %w", dir, seq, err)
}

// parseReconcile checks a --reconcile value.
func parseReconcile(v string) (runner.Reconciliation, error) {
	switch r := runner.Reconciliation(v); r {
	case "", runner.Done, runner.NotDone:
		return r, nil
	}
	return "", fmt.Errorf("--reconcile %q: use done (the action's effects show on the desktop) or not-done (they do not: run it again)", v)
}

// reconcile settles the call a checkpoint left uncertain: the answer given
// with --reconcile, else the person at the terminal's, shown the action
// and the last screenshot. Without either it refuses: the action must not
// run again, nor be taken as done, on nobody's word.
func reconcile(ctx context.Context, u *runner.Uncertain, given runner.Reconciliation, lastShot string, ask *runner.TerminalApprover, interactive bool, out io.Writer) (runner.Reconciliation, error) {
	what := describeUncertain(u)
	if given != "" {
		fmt.Fprintf(out, "uncertain: %s; --reconcile %s\n", runner.Printable(what), given)
		return given, nil
	}
	shot := "none recorded"
	if lastShot != "" {
		shot = lastShot
	}
	if !interactive {
		return "", fmt.Errorf("--resume: %s; it may or may not have run. Check the desktop (the last screenshot: %s) and resume with --reconcile done or --reconcile not-done (no terminal to ask on)",
			runner.Printable(what), shot)
	}
	q := fmt.Sprintf("\nThe run stopped while %s.\nIt may or may not have run. The last screenshot: %s\nCheck the desktop. Were the action's effects performed (done)? [y/N] ", what, shot)
	done, err := ask.Ask(ctx, q)
	if err != nil {
		return "", fmt.Errorf("--resume: %w", err)
	}
	if done {
		return runner.Done, nil
	}
	again, err := ask.Ask(ctx, "Then it did not run: run it again (not-done)? [y/N] ")
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
