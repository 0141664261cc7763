package runner

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentd-dev/agentd/runner/ledger"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// crashLedger saves checkpoints into a real file ledger and, at checkpoint
// number crashAt, fails after the write: the run stops there, as if the
// process had died right after the checkpoint reached the disk.
type crashLedger struct {
	f       *ledger.File
	n       int
	crashAt int
	phases  []string
}

// openLedger opens the checkpoints in dir. The file closes when the test
// ends; a test that opens it again, as a resumed run does, closes it first.
func openLedger(t *testing.T, dir string) *ledger.File {
	t.Helper()
	f, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

var errCrash = errors.New("simulated crash")

func (c *crashLedger) Save(data []byte) error {
	if err := c.f.Save(data); err != nil {
		return err
	}
	c.n++
	cp, err := LoadCheckpoint(data)
	if err != nil {
		return err
	}
	c.phases = append(c.phases, cp.Phase)
	if c.n == c.crashAt {
		return errCrash
	}
	return nil
}

// runToCrash runs o on ts, saving its checkpoints in f, until the
// crashAt'th save fails as if the process died there.
func runToCrash(t *testing.T, ts *Toolset, o RunOptions, calls CallOptions, f *ledger.File, crashAt int) {
	t.Helper()
	o.Ledger = &crashLedger{f: f, crashAt: crashAt}
	if _, err := ts.Run(context.Background(), o, calls); !errors.Is(err, errCrash) {
		t.Fatalf("run: %v, want the simulated crash", err)
	}
}

// lastCheckpoint is the checkpoint a resume starts from: the last one in f.
func lastCheckpoint(t *testing.T, f *ledger.File) *Checkpoint {
	t.Helper()
	data, _, err := f.Last()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := LoadCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func TestCheckpointsAtEveryBoundary(t *testing.T) {
	ts, srv, _ := setup(t, respserver.Call(shot), respserver.Call(`{"type":"click","x":3,"y":4}`), respserver.Final("done"))
	f := openLedger(t, t.TempDir())
	led := &crashLedger{f: f}
	o := opts()
	o.Ledger = led
	if _, err := ts.Run(context.Background(), o, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	want := []string{PhaseRequest, PhaseResponse, PhaseBeforeCall, PhaseAfterCall, PhaseRequest, PhaseResponse, PhaseBeforeCall, PhaseAfterCall, PhaseRequest}
	if !slices.Equal(led.phases, want) {
		t.Fatalf("checkpoints %v, want %v", led.phases, want)
	}
}

// A run that dies right after the pending checkpoint of a request resumes
// from it: every action runs exactly once, the request budget and the
// completed calls carry over, in both the stored and the local-history mode.
func TestResumeAfterACrashBeforeARequest(t *testing.T) {
	for _, mode := range historyModes {
		t.Run(mode.name, func(t *testing.T) {
			// One local step: respserver refuses a stateless request
			// re-sending outputs of calls older than the last response.
			ts, srv, d := setup(t, respserver.Call(`{"type":"type","text":"hi"}`), respserver.Final("done"))
			dir := t.TempDir()
			f := openLedger(t, dir)
			o := mode.opts()
			o.MaxSteps = 6
			// The 5th checkpoint is the pending one of request 2.
			runToCrash(t, ts, o, CallOptions{}, f, 5)
			f.Close()

			f = openLedger(t, dir)
			cp := lastCheckpoint(t, f)
			if cp.Phase != PhaseRequest || cp.Step != 2 {
				t.Fatalf("last checkpoint %s of step %d, want the request of step 2", cp.Phase, cp.Step)
			}
			o2 := mode.opts()
			o2.Input = ""
			o2.Ledger = f
			res, err := ts.Resume(context.Background(), cp, o2, CallOptions{})
			if err != nil {
				t.Fatal(err, srv.Violations())
			}
			noViolations(t, srv)
			if res.FinalMessage != "done" || res.Steps != 2 || len(res.CompletedCallIDs) != 1 {
				t.Fatalf("result %+v", res)
			}
			if got := srv.Served(); got != 2 {
				t.Fatalf("the server answered %d requests, want 2", got)
			}
			var acts []string
			for _, k := range d.kinds() {
				if k != "screenshot" {
					acts = append(acts, k)
				}
			}
			if !slices.Equal(acts, []string{"type"}) {
				t.Fatalf("actions %v, want the typing once", acts)
			}
		})
	}
}

func TestResumeRefusesACheckpointInsideTheCalls(t *testing.T) {
	ts, _, d := setup(t, respserver.Call(shot), respserver.Call(`{"type":"click","x":3,"y":4}`), respserver.Final("done"))
	f := openLedger(t, t.TempDir())
	// The 7th checkpoint is before the click.
	runToCrash(t, ts, opts(), CallOptions{}, f, 7)
	before := len(d.Calls())
	cp := lastCheckpoint(t, f)
	if _, err := ts.Resume(context.Background(), cp, opts(), CallOptions{}); !errors.Is(err, ErrUncertain) {
		t.Fatalf("resume from %s: %v, want ErrUncertain", cp.Phase, err)
	}
	if len(d.Calls()) != before {
		t.Fatal("the refused resume touched the desktop")
	}
}
