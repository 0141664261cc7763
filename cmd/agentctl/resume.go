package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentd-dev/agentd/ledger"
	"github.com/agentd-dev/agentd/runner"
)

// ledgerDir is where a run keeps its checkpoints, inside its record.
func ledgerDir(record string) string { return filepath.Join(record, "ledger") }

// startNote is what the first run of a record noted at its start.
type startNote struct {
	Task     string `json:"task"`
	Model    string `json:"model"`
	Mode     string `json:"mode"`
	MaxSteps int    `json:"max_steps"`
}

// resumable reads the record in dir for a resume: its start note, and
// whether a run in it already finished well. It holds the run's ledger
// (refused if another process does) and returns its newest checkpoint.
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
			Kind string          `json:"kind"`
			OK   bool            `json:"ok"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue // a line torn by the crash
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
	if _, err := os.Stat(ledgerDir(dir)); err != nil {
		return start, nil, nil, fmt.Errorf("--resume %s: the run kept no checkpoints: %w", dir, err)
	}
	led, err := ledger.Open(ledgerDir(dir))
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
