package console

import (
	"encoding/json"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/runner/session"
)

// A run record is read by this file for every format version agentctl has
// ever written (runner.RecordVersion): version 0 has no header line,
// version 1 starts with {"kind":"record","version":1}; version 2 adds a
// drag's path to its action line (older drags are drawn first to last,
// all their summary holds); version 3 adds takeover lines (a person held
// the desktop). A line of a kind it
// does not know is skipped, never an error: a record is read as far as it
// makes sense.

// RunSummary is one run in the list of runs.
type RunSummary struct {
	ID      string    `json:"id"`
	Version int       `json:"version"`
	Task    string    `json:"task"`
	Model   string    `json:"model"`
	Start   time.Time `json:"start"`
	Ended   bool      `json:"ended"`
	OK      bool      `json:"ok"`
	Steps   int       `json:"steps"`
	Error   string    `json:"error,omitempty"`
}

// Run is a run record made for the page: its steps in order.
type Run struct {
	RunSummary
	MaxSteps     int      `json:"max_steps,omitempty"`
	FinalMessage string   `json:"final_message,omitempty"`
	Usage        *Usage   `json:"usage,omitempty"`
	DurationS    float64  `json:"duration_s,omitempty"`
	Attempted    []string `json:"attempted_call_ids,omitempty"`
	Completed    []string `json:"completed_call_ids,omitempty"`
	StepList     []*Step  `json:"step_list"`
}

// Usage is a response's tokens, or a run's totals.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
	Requests     int   `json:"requests,omitempty"`
	Incomplete   bool  `json:"incomplete,omitempty"`
}

// Step is one request to the model and what its answer did.
type Step struct {
	N          int       `json:"n"`
	Time       time.Time `json:"time"`
	ResponseS  float64   `json:"response_s"`
	Usage      *Usage    `json:"usage,omitempty"`
	ResponseID string    `json:"response_id,omitempty"`
	CallIDs    []string  `json:"call_ids,omitempty"`
	// Shown is the screenshot the model saw when it chose this step's
	// actions (their coordinates are in its image space): the last one of
	// an earlier step.
	Shown       *Shot      `json:"shown,omitempty"`
	Actions     []Action   `json:"actions,omitempty"`
	Approvals   []Approval `json:"approvals,omitempty"`
	Screenshots []Shot     `json:"screenshots,omitempty"`
	Codes       int        `json:"codes,omitempty"`
	// Takeovers are a person's holds on the desktop that stopped a call.
	Takeovers []Takeover `json:"takeovers,omitempty"`
	Final     string     `json:"final,omitempty"`
}

// Shot is a screenshot file of the record.
type Shot struct {
	CallID    string  `json:"call_id,omitempty"`
	File      string  `json:"file"`
	Width     int     `json:"width"`
	Height    int     `json:"height"`
	Bytes     int     `json:"bytes"`
	DurationS float64 `json:"duration_s"`
}

// Action is one performed action and its mark on the screenshot.
type Action struct {
	CallID    string  `json:"call_id"`
	Summary   string  `json:"summary"`
	Error     string  `json:"error,omitempty"`
	DurationS float64 `json:"duration_s"`
	Mark      *Mark   `json:"mark,omitempty"`
}

// Mark is how an action is drawn: a click (Button), a move, a drag from
// (X,Y) to (X2,Y2) through Path (every point, when the record has it), a
// scroll at (X,Y) by (DX,DY), or a label for what has no point (typed
// text, shown by its length only, and keys).
type Mark struct {
	Kind   string  `json:"kind"`
	X      int     `json:"x"`
	Y      int     `json:"y"`
	X2     int     `json:"x2,omitempty"`
	Y2     int     `json:"y2,omitempty"`
	DX     int     `json:"dx,omitempty"`
	DY     int     `json:"dy,omitempty"`
	Button string  `json:"button,omitempty"`
	Label  string  `json:"label,omitempty"`
	Path   []Point `json:"path,omitempty"`
}

// Point is a point of a drag's path.
type Point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// Approval is a question asked of a person, and its answer.
type Approval struct {
	Kind     string   `json:"kind"`
	CallID   string   `json:"call_id"`
	Summary  string   `json:"summary,omitempty"`
	Checks   []string `json:"checks,omitempty"`
	Answered bool     `json:"answered"`
	Approved bool     `json:"approved"`
	Reason   string   `json:"reason,omitempty"`
	By       string   `json:"by,omitempty"`
}

// Takeover is a person's hold on the desktop (record version 2): the
// call it stopped, its actions that did not run, and once handed back the
// record's Handback: who held it, what they did (typed text by its length
// only) and their notes.
type Takeover struct {
	CallID     string   `json:"call_id"`
	NotRun     []string `json:"not_run,omitempty"`
	HandedBack bool     `json:"handed_back"`
	computer.Handback
}

// ApprovalBy is agentctl's note of who answered a question (kind
// "approval_by"), written just before the runner records the answer.
type ApprovalBy struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
	CallID   string `json:"call_id"`
	Index    int    `json:"index"`
	Kind     string `json:"kind"`
}

// readRun reads the record in dir, the folder id of the runs folder
// (openRecordFile: no symlink is followed).
func readRun(dir, id string) (*Run, error) {
	f, _, err := openRecordFile(filepath.Dir(dir), id, "events.jsonl")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseRun(f, id)
}

func parseRun(r io.Reader, id string) (*Run, error) {
	run := &Run{RunSummary: RunSummary{ID: id}}
	var (
		step     *Step
		lastShot *Shot
		asked    = map[string]int{}    // call id + kind → index in the step's approvals
		by       = map[string]string{} // call id + kind → who answered (agentctl's note)
	)
	stepOf := func(l *runner.RecordLine) *Step {
		if step == nil || (l.Step != 0 && l.Step != step.N) {
			step = &Step{N: l.Step, Time: l.Time, Shown: lastShot}
			run.StepList = append(run.StepList, step)
			clear(asked)
		}
		return step
	}
	err := runner.ReadRecord(r, func(l *runner.RecordLine) error {
		switch l.Kind {
		case "record":
			run.Version = l.Version
		case "start":
			if start := session.ReadConfig(l); start != nil {
				run.Task, run.Model, run.MaxSteps = start.Task, start.Model, start.MaxSteps
			}
			run.Start = l.Time
		case runner.EventRequest:
			if run.Start.IsZero() {
				run.Start = l.Time
			}
			st := stepOf(l)
			if l.MaxSteps > 0 {
				run.MaxSteps = l.MaxSteps
			}
			st.Time = l.Time
		case runner.EventResponse:
			st := stepOf(l)
			st.ResponseS, st.Usage, st.ResponseID, st.CallIDs = seconds(l.Duration), usageOf(l.Usage), l.ResponseID, l.CallIDs
		case runner.EventApprovalAsked, runner.EventApprovalAnswered:
			if l.Approval == nil {
				return nil
			}
			st := stepOf(l)
			key := l.CallID + "\x00" + l.Approval.Kind + "\x00" + l.Approval.Summary
			i, ok := asked[key]
			if !ok || st.Approvals[i].Answered {
				a := Approval{Kind: l.Approval.Kind, CallID: l.CallID, Summary: l.Approval.Summary}
				for _, c := range l.Approval.Checks {
					a.Checks = append(a.Checks, c.Code+" ("+c.ID+")")
				}
				st.Approvals = append(st.Approvals, a)
				i = len(st.Approvals) - 1
				asked[key] = i
			}
			if l.Kind == runner.EventApprovalAnswered {
				a := &st.Approvals[i]
				a.Answered, a.Approved, a.Reason, a.By = true, l.Approval.Approved, l.Approval.Reason, by[l.CallID+"\x00"+l.Approval.Kind]
			}
		case runner.EventAction:
			if l.Action == nil {
				return nil
			}
			st := stepOf(l)
			m := markOf(l.Action.Summary)
			if m != nil && m.Kind == "drag" && len(l.Action.Path) >= 2 {
				for _, p := range l.Action.Path {
					m.Path = append(m.Path, Point{X: p.X, Y: p.Y})
				}
			}
			st.Actions = append(st.Actions, Action{CallID: l.CallID, Summary: l.Action.Summary, Error: l.Action.Error,
				DurationS: seconds(l.Duration), Mark: m})
		case runner.EventScreenshot:
			if l.Screenshot == nil {
				return nil
			}
			st := stepOf(l)
			img := l.Screenshot.Transform.Image
			sh := Shot{CallID: l.CallID, File: l.Screenshot.File, Width: img.W, Height: img.H, Bytes: l.Screenshot.Bytes, DurationS: seconds(l.Duration)}
			st.Screenshots = append(st.Screenshots, sh)
			if sh.File != "" {
				lastShot = &st.Screenshots[len(st.Screenshots)-1]
			}
		case "approval_by":
			// agentctl notes who answered just before the runner records
			// the answer.
			var note ApprovalBy
			if json.Unmarshal(l.Data, &note) == nil {
				by[note.CallID+"\x00"+note.Kind] = note.By
			}
		case runner.EventTakeover:
			if l.Takeover == nil {
				return nil
			}
			st := stepOf(l)
			tk := l.Takeover
			if tk.Phase == runner.TakeoverHandedBack && len(st.Takeovers) > 0 && st.Takeovers[len(st.Takeovers)-1].CallID == l.CallID && !st.Takeovers[len(st.Takeovers)-1].HandedBack {
				last := &st.Takeovers[len(st.Takeovers)-1]
				last.HandedBack, last.Handback = true, tk.Handback
				return nil
			}
			st.Takeovers = append(st.Takeovers, Takeover{CallID: l.CallID, NotRun: tk.NotRun, HandedBack: tk.Phase == runner.TakeoverHandedBack,
				Handback: tk.Handback})
		case runner.EventCode:
			stepOf(l).Codes++
		case runner.EventFinal:
			stepOf(l).Final = l.Message
		case "end":
			e := l.End
			run.Ended, run.OK, run.Error, run.FinalMessage = true, e.OK, e.Error, e.FinalMessage
			run.Steps, run.DurationS = e.Steps, seconds(e.Duration)
			run.Usage = &Usage{InputTokens: e.Usage.InputTokens, OutputTokens: e.Usage.OutputTokens, TotalTokens: e.Usage.TotalTokens,
				Requests: e.Usage.Requests, Incomplete: e.Usage.Incomplete}
			run.Attempted, run.Completed = e.AttemptedCallIDs, e.CompletedCallIDs
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !run.Ended {
		run.Steps = len(run.StepList)
	}
	// A Shown pointer points into a slice that may have grown since: copy.
	for _, st := range run.StepList {
		if st.Shown != nil {
			sh := *st.Shown
			st.Shown = &sh
		}
	}
	return run, nil
}

// seconds is a recorded duration as the page shows it.
func seconds(d runner.Duration) float64 { return time.Duration(d).Seconds() }

// usageOf is a response's recorded usage (nil when it carried none).
func usageOf(u *runner.Usage) *Usage {
	if u == nil {
		return nil
	}
	return &Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
}

var (
	clickRE  = regexp.MustCompile(`^click (\w+) \((\d+),(\d+)\)`)
	pointRE  = regexp.MustCompile(`^(double_click|move) \((\d+),(\d+)\)`)
	scrollRE = regexp.MustCompile(`^scroll \((\d+),(\d+)\) by \((-?\d+),(-?\d+)\)`)
	dragRE   = regexp.MustCompile(`^drag \((\d+),(\d+)\)→\((\d+),(\d+)\)`)
)

// markOf reads an action's summary (actions.Action.String, the same in
// every record version): where it happened and how to draw it.
func markOf(summary string) *Mark {
	num := func(s string) int { v, _ := strconv.Atoi(s); return v }
	if m := clickRE.FindStringSubmatch(summary); m != nil {
		return &Mark{Kind: "click", Button: m[1], X: num(m[2]), Y: num(m[3])}
	}
	if m := pointRE.FindStringSubmatch(summary); m != nil {
		return &Mark{Kind: m[1], X: num(m[2]), Y: num(m[3])}
	}
	if m := scrollRE.FindStringSubmatch(summary); m != nil {
		return &Mark{Kind: "scroll", X: num(m[1]), Y: num(m[2]), DX: num(m[3]), DY: num(m[4])}
	}
	if m := dragRE.FindStringSubmatch(summary); m != nil {
		return &Mark{Kind: "drag", X: num(m[1]), Y: num(m[2]), X2: num(m[3]), Y2: num(m[4])}
	}
	if summary != "" && !slices.Contains([]string{"screenshot", "wait"}, summary) {
		return &Mark{Kind: "label", Label: summary}
	}
	return nil
}

// listRuns reads the summaries of the runs in dir, newest first. A folder
// that is not a readable record is left out.
func listRuns(dir string) ([]RunSummary, error) {
	return listNewest(dir, func(id string) (RunSummary, error) {
		r, err := readRun(filepath.Join(dir, id), id)
		if err != nil {
			return RunSummary{}, err
		}
		return r.RunSummary, nil
	}, func(r RunSummary) time.Time { return r.Start })
}
