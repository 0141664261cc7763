package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Record writes a run record: a folder holding events.jsonl (one JSON object
// per line: requests, responses, approvals, actions, screenshots,
// diagnostics, the end) and every screenshot sent to the model as
// step-NNN.png, so a user can see exactly what happened. It only writes what
// it is given; credentials never reach it.
//
// The first line names the format and its version, {"kind": "record",
// "version": RecordVersion}; records written before versioning have no such
// line (version 0). ReadRecord reads every version ever written.
//
// Use Event as RunOptions.OnEvent and Diagnostic as RunOptions.OnDiagnostic.
// Writing errors do not disturb the run; Finish reports the first one.
type Record struct {
	dir string

	mu    sync.Mutex
	f     *os.File
	err   error
	shots map[int]int // screenshots written per step
	spare *os.File    // made ahead for the next screenshot (PrepareShot)
	done  bool        // Finish has run
}

// CreateRecord creates dir (and its parents), private, and starts its
// events.jsonl. It refuses a folder that already holds a record.
func CreateRecord(dir string) (*Record, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	// A folder that existed already is the record's too.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	r := &Record{dir: dir, f: f, shots: map[int]int{}}
	r.line(struct {
		Kind    string    `json:"kind"`
		Version int       `json:"version"`
		Time    time.Time `json:"time"`
	}{"record", RecordVersion, time.Now()})
	if r.err != nil {
		f.Close()
		return nil, r.err
	}
	return r, nil
}

// RecordVersion is the version of the run record format this package
// writes. Version 1 added the first line that carries it; version 2 adds
// each drag's path to its action line; version 3 added the takeover lines
// (EventTakeover), which older readers skip as a kind they do not know.
const RecordVersion = 3

// Dir is the record's folder.
func (r *Record) Dir() string { return r.dir }

// Event records ev; a screenshot's PNG goes to its own file, named in the
// line.
func (r *Record) Event(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := ev.Screenshot; s != nil && len(s.PNG) > 0 {
		shot := *s // the caller's event stays as it was
		r.shots[ev.Step]++
		shot.File = fmt.Sprintf("step-%03d.png", ev.Step)
		if n := r.shots[ev.Step]; n > 1 {
			shot.File = fmt.Sprintf("step-%03d-%d.png", ev.Step, n)
		}
		if err := r.writeShot(shot.File, shot.PNG); err != nil {
			r.keep(fmt.Errorf("run record: %w", err))
			shot.File = ""
		}
		ev.Screenshot = &shot
	}
	r.line(ev)
}

// writeShot writes a screenshot's file: the spare PrepareShot made, renamed
// to name, or else a new file. It runs under r.mu.
func (r *Record) writeShot(name string, data []byte) error {
	path := filepath.Join(r.dir, name)
	f := r.spare
	r.spare = nil
	if f == nil {
		return os.WriteFile(path, data, 0o600)
	}
	_, err := f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// spareShot names the empty file PrepareShot makes; a crash can leave one
// behind, which OpenRecord removes.
const spareShot = ".shot-*.png"

// PrepareShot makes the file the next screenshot will be written to, ahead
// of it: creating a file is most of a screenshot's writing time (0.4 to
// 0.8 ms on our CI machine's disk, where writing its 124 KB takes 0.05), so
// a writer that has a moment to spare (the MCP server's journal, when a
// call starts and the guest works) spends it there rather than when the
// screenshot arrives. Finish removes a spare left unused.
func (r *Record) PrepareShot() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spare != nil || r.done {
		return
	}
	// A spare that cannot be made is no loss: the screenshot's own file
	// is made when it arrives, and its error reported then.
	if f, err := os.CreateTemp(r.dir, spareShot); err == nil {
		r.spare = f
	}
}

// Diagnostic records a diagnostic record.
func (r *Record) Diagnostic(d Diagnostic) {
	r.Note("diagnostic", d)
}

// Note records a line of the caller's own, such as the task and model at the
// start: {"kind": kind, "time": ..., "data": data}.
func (r *Record) Note(kind string, data any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.line(struct {
		Kind string    `json:"kind"`
		Time time.Time `json:"time"`
		Data any       `json:"data"`
	}{kind, time.Now(), data})
}

// Finish records how the run ended (its result or its error), closes the
// record and returns the first error met while writing it.
func (r *Record) Finish(res *RunResult, runErr error) error {
	e := RecordEnd{Kind: "end", Time: time.Now()}
	var re *RunError
	switch {
	case runErr != nil:
		e.Error = runErr.Error()
		if errors.As(runErr, &re) {
			e.ResponseID, e.Steps, e.Usage = re.ResponseID, re.Steps, re.Usage
			e.AttemptedCallIDs, e.CompletedCallIDs = re.AttemptedCallIDs, re.CompletedCallIDs
		}
	case res != nil:
		e.OK, e.FinalMessage, e.ResponseID, e.Steps = true, res.FinalMessage, res.ResponseID, res.Steps
		e.CompletedCallIDs, e.Usage, e.Duration = res.CompletedCallIDs, res.Usage, Duration(res.Duration)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.line(e)
	r.keep(r.f.Close())
	r.done = true
	if r.spare != nil {
		r.spare.Close()
		os.Remove(r.spare.Name())
		r.spare = nil
	}
	return r.err
}

// line writes one JSON line. It runs under r.mu.
func (r *Record) line(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		r.keep(fmt.Errorf("run record: encode: %w", err))
		return
	}
	_, err = r.f.Write(append(data, '\n'))
	r.keep(err)
}

func (r *Record) keep(err error) {
	if err != nil && r.err == nil {
		r.err = err
	}
}
