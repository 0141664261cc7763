package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/guest/backend"
)

// Verdict is one checker's judgement and what it read.
type Verdict struct {
	Checker string `json:"checker"` // the checker, in short
	Pass    bool   `json:"pass"`
	// Read is what the checker read from the guest (cut to maxRead).
	Read string `json:"read"`
	// Why says what differed, or what could not be read.
	Why string `json:"why,omitempty"`
}

// maxRead bounds Verdict.Read.
const maxRead = 400

// Commander is a guest in which a command can run: local guests (on this
// machine, with the guest's display, in its home).
type Commander interface {
	Command(ctx context.Context, argv []string) (out []byte, exit int, err error)
}

// localCommander runs commands for a local guest: its X display, its home
// as the working folder.
type localCommander struct {
	home string
	env  []string
}

func (c localCommander) Command(ctx context.Context, argv []string) ([]byte, int, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.home
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.home, "LANG=C.UTF-8"}, c.env...)
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return out, exitErr.ExitCode(), nil
	}
	if err != nil {
		return out, -1, err
	}
	return out, 0, nil
}

// commanderOf is the guest's Commander, or nil when its backend offers
// none.
func commanderOf(inst backend.Instance) Commander {
	if p, ok := inst.(pooledGuest); ok {
		inst = p.Instance
	}
	if c, ok := inst.(Commander); ok {
		return c
	}
	if x, ok := inst.(backend.XReacher); ok && inst.Describe().Backend == "local" {
		return localCommander{home: inst.Describe().Home, env: x.X().Env}
	}
	return nil
}

// BrowserReader is what the url and page_text checkers read: agentd's
// browser (browserrpc.Driver).
type BrowserReader interface {
	browser.StateReader
	browser.PageTextReader
}

// state is what the checkers of one trial read from.
type state struct {
	files   backend.FileReader
	records func(ctx context.Context) ([]byte, error)
	command Commander
	browser BrowserReader
	server  string // "{{server}}"
}

// check judges every checker of t; each is read on its own, so one that
// cannot read is a failing verdict, not a lost trial.
func check(ctx context.Context, t *Task, st state) []Verdict {
	out := make([]Verdict, 0, len(t.Checkers))
	for _, c := range t.Checkers {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		v := c.judge(cctx, st)
		cancel()
		v.Read = cut(v.Read)
		out = append(out, v)
	}
	return out
}

// Describe is the checker in short, for verdicts and the summary.
func (c *Checker) Describe() string {
	what := c.Kind
	switch c.Kind {
	case KindFile:
		what += " " + c.Path
	case KindCommand:
		what += " " + strings.Join(c.Argv, " ")
	case KindRecord:
		if c.Count != nil {
			what += fmt.Sprintf(" count=%d", *c.Count)
		}
	}
	if c.JSONPath != "" {
		what += " ." + c.JSONPath
	}
	switch {
	case c.Equals != nil:
		var b bytes.Buffer
		if json.Compact(&b, *c.Equals) != nil {
			b.Write(*c.Equals)
		}
		what += " equals " + b.String()
	case c.Contains != "":
		what += " contains " + strconv.Quote(c.Contains)
	case c.Matches != "":
		what += " matches /" + c.Matches + "/"
	case c.Absent:
		what += " absent"
	}
	if c.Exit != nil {
		what += fmt.Sprintf(" exit %d", *c.Exit)
	}
	return what
}

func (c *Checker) judge(ctx context.Context, st state) Verdict {
	v := Verdict{Checker: c.Describe()}
	fail := func(format string, args ...any) Verdict {
		v.Pass, v.Why = false, fmt.Sprintf(format, args...)
		return v
	}
	switch c.Kind {
	case KindFile:
		data, err := st.files.ReadFile(ctx, c.Path)
		if c.Absent {
			if errors.Is(err, fs.ErrNotExist) {
				v.Pass, v.Read = true, "(no such file)"
				return v
			}
			if err != nil {
				return fail("read: %v", err)
			}
			v.Read = string(data)
			return fail("the file exists")
		}
		if err != nil {
			return fail("read: %v", err)
		}
		v.Read = string(data)
		return c.compare(v, data, st.server)
	case KindRecord:
		data, err := st.records(ctx)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fail("read the records: %v", err)
		}
		recs, err := parseRecords(data)
		if err != nil {
			return fail("%v", err)
		}
		v.Read = fmt.Sprintf("%d records", len(recs))
		if c.Count != nil && len(recs) != *c.Count {
			return fail("%d records, want %d", len(recs), *c.Count)
		}
		if c.Count != nil && c.Equals == nil && c.Contains == "" && c.Matches == "" {
			v.Pass = true
			return v
		}
		if len(recs) == 0 {
			return fail("no record received")
		}
		last := recs[len(recs)-1]
		v.Read = fmt.Sprintf("%d records, the last %s", len(recs), last)
		return c.compare(v, last, st.server)
	case KindCommand:
		if st.command == nil {
			return fail("this guest's backend runs no commands in it")
		}
		out, exit, err := st.command.Command(ctx, c.Argv)
		if err != nil {
			return fail("run: %v", err)
		}
		v.Read = fmt.Sprintf("exit %d: %s", exit, out)
		want := 0
		if c.Exit != nil {
			want = *c.Exit
		}
		if exit != want {
			return fail("exit %d, want %d", exit, want)
		}
		if c.Equals == nil && c.Contains == "" && c.Matches == "" {
			v.Pass = true
			return v
		}
		return c.compare(v, out, st.server)
	case KindURL, KindPageText:
		if st.browser == nil {
			return fail("the guest has no browser to read")
		}
		s, err := st.browser.State(ctx)
		if err != nil {
			return fail("browser state: %v", err)
		}
		active := s.ActiveTab()
		if active == nil {
			return fail("no active tab")
		}
		if c.Kind == KindURL {
			v.Read = active.URL
			return c.compare(v, []byte(active.URL), st.server)
		}
		res, err := st.browser.GetPageText(ctx, browser.GetPageTextArgs{TabID: &active.ID})
		if err != nil {
			return fail("page text: %v", err)
		}
		var text string
		switch {
		case res.Text != nil:
			text = *res.Text
		case res.Read != nil:
			text = res.Read.Text
		default:
			return fail("the page has no text")
		}
		v.Read = text
		return c.compare(v, []byte(text), st.server)
	case KindWindow:
		if st.command == nil {
			return fail("this guest's backend runs no commands in it, so its windows cannot be listed")
		}
		out, exit, err := st.command.Command(ctx, []string{"sh", "-c", windowTitles})
		if err != nil || exit != 0 {
			return fail("list the windows: exit %d %v: %s", exit, err, out)
		}
		v.Read = string(out)
		// Any one window's title judged alone.
		var last Verdict
		for _, title := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if last = c.compare(v, []byte(title), st.server); last.Pass {
				return last
			}
		}
		return fail("no window's title %s", strings.TrimPrefix(c.Describe(), "window "))
	}
	return fail("unknown kind %q", c.Kind)
}

// windowTitles prints the title of every window the window manager
// manages, one a line.
const windowTitles = `for id in $(xprop -root _NET_CLIENT_LIST | grep -o '0x[0-9a-f]*'); do
  xprop -id "$id" _NET_WM_NAME | sed -n 's/^_NET_WM_NAME(UTF8_STRING) = "\(.*\)"$/\1/p'
done`

// compare judges data by the checker's comparison, the JSON value at
// JSONPath when set; "{{server}}" in the wanted value is the trial's
// server address.
func (c *Checker) compare(v Verdict, data []byte, server string) Verdict {
	got := data
	// A JSON path, or a wanted value other than a string, compares JSON
	// values: key order and spacing do not matter.
	if c.JSONPath != "" || c.Equals != nil && !bytes.HasPrefix(bytes.TrimSpace(*c.Equals), []byte(`"`)) {
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			v.Why = "not JSON: " + err.Error()
			return v
		}
		val := doc
		if c.JSONPath != "" {
			var err error
			if val, err = lookup(doc, c.JSONPath); err != nil {
				v.Why = err.Error()
				return v
			}
		}
		var want any
		if err := json.Unmarshal([]byte(expand(string(*c.Equals), server)), &want); err != nil {
			v.Why = "equals: " + err.Error()
			return v
		}
		b, _ := json.Marshal(val)
		if c.JSONPath != "" {
			v.Read = "." + c.JSONPath + " = " + string(b)
		}
		v.Pass = reflect.DeepEqual(val, want)
		if !v.Pass {
			v.Why = fmt.Sprintf("%s, want %s", b, *c.Equals)
		}
		return v
	}
	switch {
	case c.Equals != nil:
		var want string
		if err := json.Unmarshal(*c.Equals, &want); err != nil {
			v.Why = "equals: want a JSON string for a whole text (json_path compares other values)"
			return v
		}
		want = expand(want, server)
		v.Pass = string(got) == want
		if !v.Pass {
			v.Why = fmt.Sprintf("%q, want %q", cut(string(got)), cut(want))
		}
	case c.Contains != "":
		want := expand(c.Contains, server)
		v.Pass = bytes.Contains(got, []byte(want))
		if !v.Pass {
			v.Why = fmt.Sprintf("does not contain %q", want)
		}
	case c.Matches != "":
		re, err := regexp.Compile(expand(c.Matches, regexp.QuoteMeta(server)))
		if err != nil {
			v.Why = err.Error()
			return v
		}
		v.Pass = re.Match(got)
		if !v.Pass {
			v.Why = fmt.Sprintf("does not match /%s/", c.Matches)
		}
	}
	return v
}

// lookup finds the value at a dotted path: object keys and array indexes.
func lookup(doc any, path string) (any, error) {
	cur := doc
	for _, part := range strings.Split(path, ".") {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[part]
			if !ok {
				return nil, fmt.Errorf("no .%s (at %q)", path, part)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("no .%s (index %q of %d)", path, part, len(x))
			}
			cur = x[i]
		default:
			return nil, fmt.Errorf("no .%s (%q of a %T)", path, part, cur)
		}
	}
	return cur, nil
}

// cut shortens s to maxRead bytes on a character boundary.
func cut(s string) string {
	if len(s) <= maxRead {
		return s
	}
	i := maxRead
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
