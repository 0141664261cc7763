package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/runner/ledger"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// timedLedger times every Save of the file ledger, by the checkpoint's step.
type timedLedger struct {
	*ledger.File
	saves map[int][]time.Duration
	size  map[int]int64 // the folder's bytes after the step's last save
}

func (l *timedLedger) Save(data []byte) error {
	start := time.Now()
	err := l.File.Save(data)
	var head struct {
		Step int `json:"step"`
	}
	// The step comes before the history; the rest is not needed.
	_ = json.NewDecoder(bytes.NewReader(data)).Decode(&head)
	s := head.Step
	l.saves[s] = append(l.saves[s], time.Since(start))
	var n int64
	names, _ := filepath.Glob(filepath.Join(l.Dir(), "checkpoint-*"))
	for _, name := range names {
		if fi, err := os.Stat(name); err == nil {
			n += fi.Size()
		}
	}
	l.size[s] = n
	return err
}

// TestMeasureLedgerGrowth measures the checkpoints' write time per step and
// the ledger's size over a long run, stored and with local history
// (AGENTD_MEASURE_LEDGER=steps; the figures are in the README).
func TestMeasureLedgerGrowth(t *testing.T) {
	steps, _ := strconv.Atoi(prereq.OptIn(t, "AGENTD_MEASURE_LEDGER", "the ledger growth measurement (steps, e.g. 200)"))
	if steps < 2 {
		t.Fatalf("AGENTD_MEASURE_LEDGER=%q: want a number of steps, at least 2", os.Getenv("AGENTD_MEASURE_LEDGER"))
	}
	// An incompressible screenshot of about 32 KiB, like a busy desktop's PNG
	// at a small view.
	noise := noisePNG(t, 180, 180)
	for _, mode := range historyModes {
		t.Run(mode.name, func(t *testing.T) {
			turns := []respserver.Turn{respserver.Call(shot)}
			for len(turns) < steps-1 {
				turns = append(turns, respserver.Call(`{"type":"click","x":5,"y":5}`))
			}
			turns = append(turns, respserver.Final("done"))
			ts, srv, d := setup(t, turns...)
			d.png, d.size.W, d.size.H = noise, 180, 180
			f := openLedger(t, t.TempDir())
			led := &timedLedger{File: f, saves: map[int][]time.Duration{}, size: map[int]int64{}}
			o := mode.opts()
			o.MaxSteps, o.Ledger = steps, led
			if _, err := ts.Run(context.Background(), o, CallOptions{}); err != nil {
				t.Fatal(err)
			}
			noViolations(t, srv)
			data, _, err := f.Last()
			if err != nil {
				t.Fatal(err)
			}
			cp, err := LoadCheckpoint(data)
			if err != nil || cp.Step != steps {
				t.Fatalf("last checkpoint %+v, %v; want step %d", cp, err, steps)
			}
			for _, at := range []int{10, 50, 100, 200} {
				if at > steps {
					continue
				}
				var total time.Duration
				for _, d := range led.saves[at] {
					total += d
				}
				t.Logf("step %d: %d saves, %v in all (median %v), ledger %s", at, len(led.saves[at]), total.Round(time.Microsecond),
					median(led.saves[at]).Round(time.Microsecond), kib(led.size[at]))
			}
		})
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func kib(n int64) string { return fmt.Sprintf("%.1f KiB", float64(n)/1024) }
