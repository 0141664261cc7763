package console

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"
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
// call it stopped, its actions that did not run, and once handed back who
// held it, what they did (typed text by its length only) and their notes.
type Takeover struct {
	CallID     string   `json:"call_id"`
	NotRun     []string `json:"not_run,omitempty"`
	HandedBack bool     `json:"handed_back"`
	By         []string `json:"by,omitempty"`
	Actions    []string `json:"actions,omitempty"`
	More       int      `json:"more,omitempty"`
	Notes      []string `json:"notes,omitempty"`
	Orphaned   bool     `json:"orphaned,omitempty"`
}

// line is every field any version's line may carry.
type line struct {
	Kind       string          `json:"kind"`
	Time       time.Time       `json:"time"`
	Version    int             `json:"version"`
	Step       int             `json:"step"`
	MaxSteps   int             `json:"max_steps"`
	ResponseID string          `json:"response_id"`
	CallID     string          `json:"call_id"`
	CallIDs    []string        `json:"call_ids"`
	Duration   float64         `json:"duration"`
	Usage      *Usage          `json:"usage"`
	Message    string          `json:"message"`
	Data       json.RawMessage `json:"data"`
	Action     *struct {
		Summary string  `json:"summary"`
		Error   string  `json:"error"`
		Path    []Point `json:"path"`
	} `json:"action"`
	Approval *struct {
		Kind     string `json:"kind"`
		Summary  string `json:"summary"`
		Checks   []struct{ ID, Code string }
		Approved bool   `json:"approved"`
		Reason   string `json:"reason"`
		By       string `json:"by"`
	} `json:"approval"`
	Screenshot *struct {
		Transform struct {
			Image struct {
				W int `json:"width"`
				H int `json:"height"`
			} `json:"image"`
		} `json:"transform"`
		Bytes int    `json:"bytes"`
		File  string `json:"file"`
	} `json:"screenshot"`
	Code     json.RawMessage `json:"code"`
	Takeover *struct {
		Phase    string   `json:"phase"`
		NotRun   []string `json:"not_run"`
		By       []string `json:"by"`
		Actions  []string `json:"actions"`
		More     int      `json:"more"`
		Notes    []string `json:"notes"`
		Orphaned bool     `json:"orphaned"`
	} `json:"takeover"`
	// The end line.
	OK               bool     `json:"ok"`
	FinalMessage     string   `json:"final_message"`
	Error            string   `json:"error"`
	Steps            int      `json:"steps"`
	AttemptedCallIDs []string `json:"attempted_call_ids"`
	CompletedCallIDs []string `json:"completed_call_ids"`
}

// maxLine bounds one line of a record (a long final message fits).
const maxLine = 8 << 20

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
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var (
		step     *Step
		lastShot *Shot
		n        int
		asked    = map[string]int{}    // call id + kind → index in the step's approvals
		by       = map[string]string{} // call id + kind → who answered (agentctl's note)
	)
	stepOf := func(l *line) *Step {
		if step == nil || (l.Step != 0 && l.Step != step.N) {
			step = &Step{N: l.Step, Time: l.Time, Shown: lastShot}
			run.StepList = append(run.StepList, step)
			clear(asked)
		}
		return step
	}
	for sc.Scan() {
		n++
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			// A line cut by a crash ends the record; anything else is not a
			// record.
			if n == 1 {
				return nil, fmt.Errorf("not a run record: line 1: %w", err)
			}
			break
		}
		switch l.Kind {
		case "record":
			run.Version = l.Version
		case "start":
			var start struct {
				Task     string `json:"task"`
				Model    string `json:"model"`
				MaxSteps int    `json:"max_steps"`
			}
			_ = json.Unmarshal(l.Data, &start)
			run.Task, run.Model, run.MaxSteps, run.Start = start.Task, start.Model, start.MaxSteps, l.Time
		case "request":
			if run.Start.IsZero() {
				run.Start = l.Time
			}
			st := stepOf(&l)
			if l.MaxSteps > 0 {
				run.MaxSteps = l.MaxSteps
			}
			st.Time = l.Time
		case "response":
			st := stepOf(&l)
			st.ResponseS, st.Usage, st.ResponseID, st.CallIDs = l.Duration, l.Usage, l.ResponseID, l.CallIDs
		case "approval_asked", "approval_answered":
			if l.Approval == nil {
				continue
			}
			st := stepOf(&l)
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
			if l.Kind == "approval_answered" {
				a := &st.Approvals[i]
				a.Answered, a.Approved, a.Reason, a.By = true, l.Approval.Approved, l.Approval.Reason, l.Approval.By
				if who := by[l.CallID+"\x00"+l.Approval.Kind]; who != "" && a.By == "" {
					a.By = who
				}
			}
		case "action":
			if l.Action == nil {
				continue
			}
			st := stepOf(&l)
			m := markOf(l.Action.Summary)
			if m != nil && m.Kind == "drag" && len(l.Action.Path) >= 2 {
				m.Path = l.Action.Path
			}
			st.Actions = append(st.Actions, Action{CallID: l.CallID, Summary: l.Action.Summary, Error: l.Action.Error,
				DurationS: l.Duration, Mark: m})
		case "screenshot":
			if l.Screenshot == nil {
				continue
			}
			st := stepOf(&l)
			sh := Shot{CallID: l.CallID, File: l.Screenshot.File, Width: l.Screenshot.Transform.Image.W,
				Height: l.Screenshot.Transform.Image.H, Bytes: l.Screenshot.Bytes, DurationS: l.Duration}
			st.Screenshots = append(st.Screenshots, sh)
			if sh.File != "" {
				lastShot = &st.Screenshots[len(st.Screenshots)-1]
			}
		case "approval_by":
			// agentctl notes who answered just before the runner records
			// the answer.
			var note struct {
				CallID string `json:"call_id"`
				Kind   string `json:"kind"`
				By     string `json:"by"`
			}
			if json.Unmarshal(l.Data, &note) == nil {
				by[note.CallID+"\x00"+note.Kind] = note.By
			}
		case "takeover":
			if l.Takeover == nil {
				continue
			}
			st := stepOf(&l)
			tk := l.Takeover
			if tk.Phase == "handed_back" && len(st.Takeovers) > 0 && st.Takeovers[len(st.Takeovers)-1].CallID == l.CallID && !st.Takeovers[len(st.Takeovers)-1].HandedBack {
				last := &st.Takeovers[len(st.Takeovers)-1]
				last.HandedBack, last.By, last.Actions, last.More, last.Notes, last.Orphaned = true, tk.By, tk.Actions, tk.More, tk.Notes, tk.Orphaned
				continue
			}
			st.Takeovers = append(st.Takeovers, Takeover{CallID: l.CallID, NotRun: tk.NotRun, HandedBack: tk.Phase == "handed_back",
				By: tk.By, Actions: tk.Actions, More: tk.More, Notes: tk.Notes, Orphaned: tk.Orphaned})
		case "code":
			stepOf(&l).Codes++
		case "final":
			stepOf(&l).Final = l.Message
		case "end":
			run.Ended, run.OK, run.Error, run.FinalMessage = true, l.OK, l.Error, l.FinalMessage
			run.Steps, run.Usage, run.DurationS = l.Steps, l.Usage, l.Duration
			run.Attempted, run.Completed = l.AttemptedCallIDs, l.CompletedCallIDs
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("run record: %w", err)
	}
	if n == 0 {
		return nil, errors.New("run record: empty")
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
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return []RunSummary{}, nil
		}
		return nil, err
	}
	runs := []RunSummary{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		r, err := readRun(filepath.Join(dir, e.Name()), e.Name())
		if err != nil {
			continue
		}
		runs = append(runs, r.RunSummary)
	}
	slices.SortFunc(runs, func(a, b RunSummary) int { return b.Start.Compare(a.Start) })
	return runs, nil
}
