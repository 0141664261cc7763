// Package eval runs a suite of desktop tasks (docs/eval.md): each trial of
// each task in a fresh guest, driven by a model (a real one, or the task's
// scripted solution served by respserver), then judged by checkers that
// read the guest's real state through its backend — files, the task
// server's records, a command's output, the browser's URL and page text,
// window titles — never what the model said it did. Results go to
// results.jsonl one line per trial, so a crashed suite resumes with only
// the trials that have none.
package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Modes a task runs in: the tool the model gets.
const (
	ModeComputer = "computer" // the computer tool on the desktop
	ModeCode     = "code"     // exec_py (Python with pyautogui) in the guest
	ModeBrowser  = "browser"  // the browser toolset on agentd's Chromium
)

// Applications a task's setup may start (setup.apps).
const (
	AppFirefox  = "firefox"
	AppMousepad = "mousepad"
)

// Screen is the size of every eval desktop: tasks' pages and scripted
// coordinates are laid out for it.
var Screen = Size{Width: 1280, Height: 800}

// Task is one task of a suite; docs/eval.md describes each field.
type Task struct {
	ID          string    `json:"id"`
	Instruction string    `json:"instruction"`
	Mode        string    `json:"mode"`
	MaxSteps    int       `json:"max_steps"`
	View        *Size     `json:"view,omitempty"`
	Setup       Setup     `json:"setup"`
	Checkers    []Checker `json:"checkers"`
	Scripted    []Turn    `json:"scripted,omitempty"`
	// ScriptedWrong is a plausible wrong solution: every checker of the
	// task must fail on it for the suite's test to pass.
	ScriptedWrong []Turn `json:"scripted_wrong,omitempty"`
}

// Size is a width and height in pixels.
type Size struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Setup is what the guest shows before the model's first step.
type Setup struct {
	// Files are placed in the desktop user's home before any app starts.
	Files []File `json:"files,omitempty"`
	// Server is the task's own HTTP server; "{{server}}" in the
	// instruction, the setup's URL, checkers and scripts is its address.
	Server *Server `json:"server,omitempty"`
	// Apps are started in order; Focus (default: the last) starts last
	// and so has the keyboard.
	Apps  []string `json:"apps,omitempty"`
	URL   string   `json:"url,omitempty"`  // the page Firefox opens
	Open  string   `json:"open,omitempty"` // the file Mousepad opens, relative to the home
	Focus string   `json:"focus,omitempty"`
}

// File is a file placed in the home.
type File struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// Server is a task-local HTTP server on the host's loopback (local guests)
// or, for the built-in pickup form, inside the guest (docker guests).
type Server struct {
	// Pages maps a path ("/", "/orders") to the HTML served there.
	Pages map[string]string `json:"pages,omitempty"`
	// Builtin names a server the guest image has instead: "pickup-form"
	// (the exercise's form, docs/design.md "The exercise").
	Builtin string `json:"builtin,omitempty"`
}

// BuiltinPickupForm is Server.Builtin for the exercise's form.
const BuiltinPickupForm = "pickup-form"

// Checker reads one piece of the guest's state and compares it. Kind says
// what it reads; one comparison (Equals, Contains, Matches, Absent, Exit
// alone for a command) says how it is judged.
type Checker struct {
	Kind string `json:"kind"`
	// file: the file, relative to the home.
	Path string `json:"path,omitempty"`
	// command: the program and its arguments, run in the guest's home.
	Argv []string `json:"argv,omitempty"`
	Exit *int     `json:"exit,omitempty"`
	// record: how many records the task's server must have received
	// (nil: any number but none); the last one is compared.
	Count *int `json:"count,omitempty"`
	// file or record: compare the JSON value at this dotted path
	// ("a.b.0") instead of the whole text.
	JSONPath string           `json:"json_path,omitempty"`
	Equals   *json.RawMessage `json:"equals,omitempty"`
	Contains string           `json:"contains,omitempty"`
	Matches  string           `json:"matches,omitempty"`
	// file: the file must not exist.
	Absent bool `json:"absent,omitempty"`
}

// Checker kinds.
const (
	KindFile     = "file"      // a file in the home
	KindRecord   = "record"    // what the task's server received
	KindCommand  = "command"   // a command in the guest
	KindURL      = "url"       // the browser's current URL (browser mode)
	KindPageText = "page_text" // the browser's page text (browser mode)
	KindWindow   = "window"    // the titles of the desktop's windows
)

// Turn is one response of a scripted model; exactly one field is set.
type Turn struct {
	// Actions are computer actions in one computer_call, in the view's
	// pixels (the screen's when the view is not set).
	Actions []json.RawMessage `json:"actions,omitempty"`
	// Code is one exec_py call.
	Code string `json:"code,omitempty"`
	// Browser are browser tool calls in one response.
	Browser []BrowserCall `json:"browser,omitempty"`
	// Final ends the run with this message.
	Final string `json:"final,omitempty"`
	// ThinkMS holds this response back, as a real model's thinking time:
	// a page that loads or a dialog that opens meanwhile is in the
	// screenshot the turn's actions follow.
	ThinkMS int `json:"think_ms,omitempty"`
}

// BrowserCall is one browser tool call: its name and arguments.
type BrowserCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// FieldError is a task that is not valid: Field names the bad field the
// way the JSON writes it ("checkers[2].matches").
type FieldError struct {
	Task  string
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Task == "" {
		return fmt.Sprintf("task: %s: %s", e.Field, e.Msg)
	}
	return fmt.Sprintf("task %s: %s: %s", e.Task, e.Field, e.Msg)
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// MaxStepsLimit bounds a task's max_steps.
const MaxStepsLimit = 500

// Validate checks every field and returns the first problem as a
// *FieldError naming it.
func (t *Task) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Task: t.ID, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if !idPattern.MatchString(t.ID) {
		return bad("id", "%q: want 1 to 64 of a-z, 0-9 and -, not starting with -", t.ID)
	}
	if strings.TrimSpace(t.Instruction) == "" {
		return bad("instruction", "empty")
	}
	switch t.Mode {
	case ModeComputer, ModeCode, ModeBrowser:
	default:
		return bad("mode", "%q: want computer, code or browser", t.Mode)
	}
	if t.MaxSteps < 1 || t.MaxSteps > MaxStepsLimit {
		return bad("max_steps", "%d: want 1 to %d", t.MaxSteps, MaxStepsLimit)
	}
	if v := t.View; v != nil && (v.Width < 64 || v.Height < 64 || v.Width > Screen.Width || v.Height > Screen.Height) {
		return bad("view", "%dx%d: want 64x64 up to the screen's %dx%d", v.Width, v.Height, Screen.Width, Screen.Height)
	}
	if err := t.Setup.validate(bad); err != nil {
		return err
	}
	if len(t.Checkers) == 0 {
		return bad("checkers", "none: a task is judged by at least one")
	}
	for i := range t.Checkers {
		if err := t.Checkers[i].validate(fmt.Sprintf("checkers[%d]", i), t, bad); err != nil {
			return err
		}
	}
	for name, turns := range map[string][]Turn{"scripted": t.Scripted, "scripted_wrong": t.ScriptedWrong} {
		for i, turn := range turns {
			if err := turn.validate(fmt.Sprintf("%s[%d]", name, i), t.Mode, bad); err != nil {
				return err
			}
		}
		if n := len(turns); n > 0 && turns[n-1].Final == "" {
			return bad(fmt.Sprintf("%s[%d]", name, n-1), "the last turn must be final")
		}
		if len(turns) > t.MaxSteps {
			return bad(name, "%d turns, more than max_steps %d", len(turns), t.MaxSteps)
		}
	}
	return nil
}

type badFunc func(field, format string, args ...any) error

func (s *Setup) validate(bad badFunc) error {
	seen := map[string]bool{}
	for i, f := range s.Files {
		if !filepath.IsLocal(f.Path) || strings.HasPrefix(f.Path, ".") {
			return bad(fmt.Sprintf("setup.files[%d].path", i), "%q: want a path inside the home, not hidden", f.Path)
		}
		if seen[f.Path] {
			return bad(fmt.Sprintf("setup.files[%d].path", i), "%q placed twice", f.Path)
		}
		seen[f.Path] = true
	}
	if srv := s.Server; srv != nil {
		switch {
		case srv.Builtin != "" && len(srv.Pages) > 0:
			return bad("setup.server", "pages or builtin, not both")
		case srv.Builtin != "" && srv.Builtin != BuiltinPickupForm:
			return bad("setup.server.builtin", "%q: want %s", srv.Builtin, BuiltinPickupForm)
		case srv.Builtin == "" && len(srv.Pages) == 0:
			return bad("setup.server", "no pages")
		}
		for p := range srv.Pages {
			if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, recordPath) || strings.HasPrefix(p, loadedPath) {
				return bad("setup.server.pages", "path %q: want one starting with / other than %s and %s", p, recordPath, loadedPath)
			}
		}
	}
	apps := map[string]bool{}
	for i, a := range s.Apps {
		if a != AppFirefox && a != AppMousepad {
			return bad(fmt.Sprintf("setup.apps[%d]", i), "%q: want firefox or mousepad", a)
		}
		if apps[a] {
			return bad(fmt.Sprintf("setup.apps[%d]", i), "%q twice", a)
		}
		apps[a] = true
	}
	if s.URL != "" && !apps[AppFirefox] {
		return bad("setup.url", "set without firefox in setup.apps")
	}
	if strings.Contains(s.URL, "{{server}}") && s.Server == nil {
		return bad("setup.url", "names {{server}} but the task has no setup.server")
	}
	if s.Open != "" {
		if !apps[AppMousepad] {
			return bad("setup.open", "set without mousepad in setup.apps")
		}
		if !filepath.IsLocal(s.Open) {
			return bad("setup.open", "%q: want a path inside the home", s.Open)
		}
	}
	if s.Focus != "" && !apps[s.Focus] {
		return bad("setup.focus", "%q is not in setup.apps", s.Focus)
	}
	return nil
}

func (c *Checker) validate(at string, t *Task, bad badFunc) error {
	field := func(name string) string { return at + "." + name }
	switch c.Kind {
	case KindFile, KindRecord, KindCommand, KindURL, KindPageText, KindWindow:
	case "":
		return bad(field("kind"), "missing: want file, record, command, url, page_text or window")
	default:
		return bad(field("kind"), "%q: want file, record, command, url, page_text or window", c.Kind)
	}
	comparisons := 0
	for _, set := range []bool{c.Equals != nil, c.Contains != "", c.Matches != "", c.Absent} {
		if set {
			comparisons++
		}
	}
	if c.Matches != "" {
		if _, err := regexp.Compile(c.Matches); err != nil {
			return bad(field("matches"), "%v", err)
		}
	}
	if c.Equals != nil && !json.Valid(*c.Equals) {
		return bad(field("equals"), "not JSON")
	}
	if c.JSONPath != "" && c.Kind != KindFile && c.Kind != KindRecord {
		return bad(field("json_path"), "only for file and record checkers")
	}
	if c.JSONPath != "" && c.Equals == nil {
		return bad(field("json_path"), "needs equals")
	}
	if c.Absent && c.Kind != KindFile {
		return bad(field("absent"), "only for file checkers")
	}
	if c.Exit != nil && c.Kind != KindCommand {
		return bad(field("exit"), "only for command checkers")
	}
	if c.Count != nil && c.Kind != KindRecord {
		return bad(field("count"), "only for record checkers")
	}
	if c.Path != "" && c.Kind != KindFile {
		return bad(field("path"), "only for file checkers")
	}
	if len(c.Argv) > 0 && c.Kind != KindCommand {
		return bad(field("argv"), "only for command checkers")
	}
	if comparisons > 1 {
		return bad(at, "more than one of equals, contains, matches and absent")
	}
	switch c.Kind {
	case KindFile:
		if !filepath.IsLocal(c.Path) {
			return bad(field("path"), "%q: want a path inside the home", c.Path)
		}
	case KindRecord:
		if t.Setup.Server == nil {
			return bad(field("kind"), "record: the task has no setup.server")
		}
		if c.Count != nil && *c.Count < 0 {
			return bad(field("count"), "%d: want 0 or more", *c.Count)
		}
		if comparisons == 0 && c.Count != nil {
			return nil // the count alone is the judgement
		}
	case KindCommand:
		if len(c.Argv) == 0 || c.Argv[0] == "" {
			return bad(field("argv"), "empty: want the program and its arguments")
		}
		if comparisons == 0 && c.Exit != nil {
			return nil
		}
	case KindURL, KindPageText:
		if t.Mode != ModeBrowser {
			return bad(field("kind"), "%s reads agentd's browser: browser mode only", c.Kind)
		}
	}
	if comparisons == 0 {
		return bad(at, "no comparison: want one of equals, contains, matches or absent")
	}
	return nil
}

func (turn *Turn) validate(at string, mode string, bad badFunc) error {
	set := 0
	for _, ok := range []bool{len(turn.Actions) > 0, turn.Code != "", len(turn.Browser) > 0, turn.Final != ""} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return bad(at, "want exactly one of actions, code, browser and final")
	}
	if turn.ThinkMS < 0 || turn.ThinkMS > 60000 {
		return bad(at+".think_ms", "%d: want 0 to 60000", turn.ThinkMS)
	}
	switch {
	case len(turn.Actions) > 0 && mode != ModeComputer:
		return bad(at+".actions", "computer actions in a %s-mode task", mode)
	case turn.Code != "" && mode != ModeCode:
		return bad(at+".code", "exec_py in a %s-mode task", mode)
	case len(turn.Browser) > 0 && mode != ModeBrowser:
		return bad(at+".browser", "browser calls in a %s-mode task", mode)
	}
	for i, a := range turn.Actions {
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(a, &probe) != nil || probe.Type == "" {
			return bad(fmt.Sprintf("%s.actions[%d]", at, i), "want an object with a type")
		}
	}
	for i, c := range turn.Browser {
		if c.Name == "" {
			return bad(fmt.Sprintf("%s.browser[%d].name", at, i), "empty")
		}
	}
	return nil
}

// Parse decodes one task, refusing unknown fields, and validates it.
func Parse(data []byte) (*Task, error) {
	var t Task
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("task: %w", err)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// Suite is a named list of tasks with unique IDs.
type Suite struct {
	Name  string
	Tasks []*Task
}

// LoadSuite reads a suite: a directory of *.json tasks, one JSON file
// holding a task or an array of tasks, or "builtin".
func LoadSuite(name string) (*Suite, error) {
	if name == "builtin" {
		return Builtin()
	}
	info, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	var files []string
	if info.IsDir() {
		if files, err = filepath.Glob(filepath.Join(name, "*.json")); err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("suite %s: no *.json task files", name)
		}
	} else {
		files = []string{name}
	}
	s := &Suite{Name: name}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("suite: %w", err)
		}
		tasks, err := parseFile(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		s.Tasks = append(s.Tasks, tasks...)
	}
	return s, s.check()
}

// parseFile decodes a file holding one task or an array of them.
func parseFile(data []byte) ([]*Task, error) {
	trimmed := strings.TrimSpace(string(data))
	if !strings.HasPrefix(trimmed, "[") {
		t, err := Parse(data)
		if err != nil {
			return nil, err
		}
		return []*Task{t}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("task list: %w", err)
	}
	var tasks []*Task
	for i, raw := range raws {
		t, err := Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

func (s *Suite) check() error {
	if len(s.Tasks) == 0 {
		return errors.New("suite: no tasks")
	}
	seen := map[string]bool{}
	for _, t := range s.Tasks {
		if seen[t.ID] {
			return fmt.Errorf("suite %s: task id %q twice", s.Name, t.ID)
		}
		seen[t.ID] = true
	}
	return nil
}

// Select keeps the tasks whose IDs are listed, in the suite's order.
func (s *Suite) Select(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var kept []*Task
	for _, t := range s.Tasks {
		if want[t.ID] {
			kept = append(kept, t)
			delete(want, t.ID)
		}
	}
	for id := range want {
		return fmt.Errorf("suite %s has no task %q", s.Name, id)
	}
	s.Tasks = kept
	return nil
}
