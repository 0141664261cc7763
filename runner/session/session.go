// Package session is one run of agentctl on a guest, from its start to its
// end, or from a resume to its end: the run's record folder (runner.Record,
// with a typed start note), its checkpoints in the user's private state
// folder (a ledger per run id, outside the record since a checkpoint holds
// typed text and the model's code), the tools of its mode, and the run or
// its resume through the runner.
//
//	s, err := session.New("runs", session.Config{Task: "...", Model: "gpt-5.4", Mode: session.Computer})
//	// or, to go on with a run that stopped: s, err := session.Open("runs/<id>")
//	defer s.Close()
//	loop, err := s.Loop(ctx, openai.NewClient(), conn, ask, runner.CallOptions{ /* the computer's approvals */ })
//	res, runErr := s.Run(ctx, loop, runner.RunOptions{ /* OnEvent, streaming */ })
//	err = s.Finish(res, runErr)
//
// A session is for one goroutine.
package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/internal/statedir"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/ledger"
)

// The modes of a run: the tools the model gets.
const (
	// Computer: the computer tool on the guest's desktop.
	Computer = "computer"
	// Code: the model writes Python (pyautogui) run in the guest (agentd --code).
	Code = "code"
	// Browser: the browser toolset on the guest's Chromium (agentd --browser).
	Browser = "browser"
)

// Config is a run's settings, noted at its start (the record's "start"
// line) so that a resume goes on as the run started. Its fields are in the
// order of their JSON names, as agentctl always wrote them.
type Config struct {
	// AllowOrigins are the origins browser mode may navigate to.
	AllowOrigins []string `json:"allow_origins,omitempty"`
	// API names the Responses endpoint, without credentials (APIEndpoint).
	API     string `json:"api"`
	Confirm bool   `json:"confirm"`
	// ContextBytes and ContextImages are the run's context budget
	// (runner.ContextBudget; either makes the run keep its own history).
	ContextBytes  int    `json:"context_bytes"`
	ContextImages int    `json:"context_images"`
	Eager         bool   `json:"eager"`
	Guest         string `json:"guest"`
	MaxSteps      int    `json:"max_steps"`
	Mode          string `json:"mode"`
	Model         string `json:"model"`
	// RunID names the run's record folder and its checkpoints (set by
	// New); a record of an agentctl that kept them inside it has none.
	RunID  string `json:"run_id"`
	Stream bool   `json:"stream"`
	Task   string `json:"task"`
	// View is the WxH the model's screenshots are fitted in (absent in
	// records from before it was noted: the checkpoint's image space then).
	View string `json:"view"`
}

// Session is one run's record and checkpoints.
type Session struct {
	// Dir is the record's folder.
	Dir string
	// Config is the run's settings: as it started, or, resumed, as it
	// goes on (Continue).
	Config Config
	// Record is the run's record, open for writing.
	Record *runner.Record
	// Checkpoint is where a resumed run goes on (nil for a new run), and
	// Uncertain the call it leaves uncertain (nil if none).
	Checkpoint *runner.Checkpoint
	Uncertain  *runner.Uncertain
	// LastShot is the path of the last screenshot the record holds ("" if
	// none): what a person reconciling an uncertain call looks at.
	LastShot string

	ledger *ledger.File
	// answer reconciles Uncertain (Resume).
	answer runner.Reconciliation
}

// New starts the record of a new run under recordDir, in a folder
// <timestamp>-<id> of its own, notes cfg as its start and takes the run's
// checkpoint folder. cfg.RunID is set.
func New(recordDir string, cfg Config) (*Session, error) {
	id := time.Now().Format("20060102-150405") + "-" + randhex.String(3)
	ld, err := ledgerDir(id)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(recordDir, id)
	rec, err := runner.CreateRecord(dir)
	if err != nil {
		return nil, err
	}
	cfg.RunID = id
	rec.Note("start", cfg)
	led, err := ledger.Open(ld)
	if err != nil {
		_ = rec.Finish(nil, err)
		return nil, err
	}
	return &Session{Dir: dir, Config: cfg, Record: rec, ledger: led}, nil
}

// Open takes the run recorded in dir to resume it: its start note, its
// newest checkpoint and the call that leaves uncertain, if any. It refuses a
// run that already finished well, and one whose checkpoints another process
// holds. The record is reopened to go on writing it.
func Open(dir string) (*Session, error) {
	s, err := open(dir)
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %w", dir, err)
	}
	return s, nil
}

func open(dir string) (*Session, error) {
	s := &Session{Dir: dir}
	start, err := readStart(dir, &s.LastShot)
	if err != nil {
		return nil, err
	}
	s.Config = *start
	if start.RunID == "" {
		if _, err := os.Stat(filepath.Join(dir, "ledger")); err == nil {
			return nil, errors.New("an older agentctl kept this run's checkpoints in its record (ledger/, which holds typed text); it cannot be resumed: delete that folder")
		}
		return nil, errors.New("the record names no checkpoints")
	}
	ld, err := ledgerDir(start.RunID)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(ld); err != nil {
		return nil, fmt.Errorf("the run kept no checkpoints: %w", err)
	}
	if s.ledger, err = ledger.Open(ld); err != nil {
		return nil, err
	}
	data, seq, err := s.ledger.Last()
	if err == nil {
		s.Checkpoint, err = runner.LoadCheckpoint(data)
	}
	if err == nil {
		s.Uncertain, err = s.Checkpoint.Uncertain()
	}
	if err == nil {
		s.Record, err = runner.OpenRecord(dir)
	}
	if err != nil {
		s.ledger.Close()
		if errors.Is(err, ledger.ErrNone) {
			return nil, errors.New("no checkpoint to resume from (the run stopped before its first request)")
		}
		return nil, fmt.Errorf("checkpoint %d: %w", seq, err)
	}
	return s, nil
}

// readStart reads the start note of the record in dir, and the last
// screenshot it holds into lastShot. A run that ended well is an error.
func readStart(dir string, lastShot *string) (*Config, error) {
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var start *Config
	errFinished := errors.New("the run already finished")
	err = runner.ReadRecord(f, func(l *runner.RecordLine) error {
		if s := l.Screenshot; s != nil && s.File != "" {
			*lastShot = filepath.Join(dir, s.File)
		}
		switch {
		case l.Kind == "start" && start == nil:
			start = ReadConfig(l)
		case l.End != nil && l.End.OK:
			return errFinished
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case start == nil:
		return nil, errors.New("the record has no start line")
	}
	return start, nil
}

// ReadConfig decodes a record's start line (nil if it does not decode).
func ReadConfig(l *runner.RecordLine) *Config {
	var c Config
	if l.Kind != "start" || json.Unmarshal(l.Data, &c) != nil {
		return nil
	}
	return &c
}

// Resuming reports whether the session goes on with a run that stopped.
func (s *Session) Resuming() bool { return s.Checkpoint != nil }

// Continue returns the settings a resume goes on with: the run's own,
// except those the caller gives, named by given (Config's JSON names, and
// "allow_origin" for AllowOrigins): the checkpoint's calls are in the
// image space of the run's view, and its history in the run's budget. The
// task, model and mode are the run's; the request budget is what is left.
func (s *Session) Continue(c Config, given func(name string) bool) Config {
	next := s.Config
	if !given("view") && next.View == "" {
		if sp := s.Checkpoint.ImageSpace; sp.W > 0 && sp.H > 0 {
			next.View = fmt.Sprintf("%dx%d", sp.W, sp.H)
		}
	}
	if next.Mode == "" {
		next.Mode = Computer
	}
	next.MaxSteps = max(next.MaxSteps, 1)
	if given("view") {
		next.View = c.View
	}
	if given("confirm") {
		next.Confirm = c.Confirm
	}
	if given("stream") {
		next.Stream = c.Stream
	}
	if given("eager") {
		next.Eager = c.Eager
	} else {
		next.Eager = next.Eager && next.Stream
	}
	if given("allow_origin") {
		next.AllowOrigins = c.AllowOrigins
	}
	if given("context_images") || given("context_bytes") {
		// A budget given replaces the run's whole (a larger one, for a run
		// that outgrew its budget).
		next.ContextImages, next.ContextBytes = c.ContextImages, c.ContextBytes
	}
	next.Guest, next.API = c.Guest, c.API
	return next
}

// resumeNote is the record's line where a resumed run goes on (its
// fields in the order of their JSON names, as agentctl always wrote them).
type resumeNote struct {
	API            string                `json:"api"`
	CallID         string                `json:"call_id,omitempty"`
	CompletedCalls int                   `json:"completed_calls"`
	Confirm        bool                  `json:"confirm"`
	Eager          bool                  `json:"eager"`
	Guest          string                `json:"guest"`
	Phase          string                `json:"phase"`
	Reconciliation runner.Reconciliation `json:"reconciliation,omitempty"`
	RequestsLeft   int                   `json:"requests_left"`
	Step           int                   `json:"step"`
	Stream         bool                  `json:"stream"`
	View           string                `json:"view"`
}

// Resume notes in the record that the run goes on with cfg (Continue's),
// the uncertain call, if any, reconciled by answer.
func (s *Session) Resume(cfg Config, answer runner.Reconciliation) {
	cp := s.Checkpoint
	s.Config, s.answer = cfg, answer
	s.Record.Note("resume", resumeNote{Step: cp.Step, Phase: cp.Phase, RequestsLeft: cp.MaxSteps - cp.Step + 1,
		CompletedCalls: len(cp.Completed), CallID: cp.CallID, Reconciliation: answer,
		Guest: cfg.Guest, API: cfg.API, View: cfg.View, Confirm: cfg.Confirm, Stream: cfg.Stream, Eager: cfg.Eager})
}

// Finish records how the run ended and closes the record. The
// checkpoints, which hold typed text and the model's code, are removed
// when the run ended well or left none: they stay only while a resume may
// need them. Problems are reported to warn; the error is the record's own.
func (s *Session) Finish(res *runner.RunResult, runErr error, warn func(error)) error {
	recErr := s.Record.Finish(res, runErr)
	if _, _, err := s.ledger.Last(); runErr == nil || errors.Is(err, ledger.ErrNone) {
		s.ledger.Close()
		if err := os.RemoveAll(s.ledger.Dir()); err != nil {
			warn(fmt.Errorf("the run's checkpoints were not removed: %w", err))
		}
	}
	return recErr
}

// Close releases the run's checkpoints for another process. It does not
// finish the record.
func (s *Session) Close() {
	if s.ledger != nil {
		s.ledger.Close()
	}
}

// ledgerDir is where the run id keeps its checkpoints: outside its record,
// in the user's private state directory (~/.local/state/agentd/runs/<id>),
// since a checkpoint holds the model's responses verbatim (typed text, the
// model's code) and the record must not.
func ledgerDir(id string) (string, error) {
	if !runIDPattern.MatchString(id) {
		return "", fmt.Errorf("run id %q is not one agentctl makes", id)
	}
	runs, err := statedir.State("agentd", "runs")
	if err != nil {
		return "", err
	}
	return filepath.Join(runs, id), nil
}

// runIDPattern is a run id as New makes it (the record folder's name);
// the id read back from a record names a folder, so nothing else is taken.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// APIEndpoint names the Responses endpoint (OPENAI_BASE_URL) for the
// record, without any credentials a URL might carry.
func APIEndpoint() string {
	base := os.Getenv("OPENAI_BASE_URL")
	if base == "" {
		return "default (api.openai.com)"
	}
	u, err := url.Parse(base)
	if err != nil {
		return "unparsable OPENAI_BASE_URL"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}
