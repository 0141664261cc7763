package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/internal/calllog"
)

// fakeDriver is a recording driver implementing every method. Every driver
// method, state read and consent callback made with its helpers appends an
// entry to one log, so tests can check what ran and in which order.
type fakeDriver struct {
	log calllog.Log
	mu  sync.Mutex
	// got holds the arguments each driver method received, in order.
	got []Arguments

	state    State
	stateErr error
	results  map[Member]any
	errs     map[Member]error
	// hook, if set, runs at the start of every driver method and state read
	// ("state" for the latter); its error is returned.
	hook func(ctx context.Context, name string) error
}

func newFake() *fakeDriver {
	return &fakeDriver{
		state: State{Version: StateV1, Tabs: []Tab{
			{ID: "t1", Title: "Pickup form", URL: "https://example.com/form?id=7#top", Active: true},
		}},
		results: map[Member]any{},
		errs:    map[Member]error{},
	}
}

func (f *fakeDriver) received() []Arguments {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Arguments(nil), f.got...)
}

func (f *fakeDriver) State(ctx context.Context) (State, error) {
	f.log.Add("state")
	if f.hook != nil {
		if err := f.hook(ctx, "state"); err != nil {
			return State{}, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.Clone(), f.stateErr
}

func (f *fakeDriver) do(ctx context.Context, a Arguments) (any, error) {
	m := a.Member()
	f.log.Add(string(m))
	f.mu.Lock()
	f.got = append(f.got, a)
	res, err := f.results[m], f.errs[m]
	f.mu.Unlock()
	if f.hook != nil {
		if herr := f.hook(ctx, string(m)); herr != nil {
			return nil, herr
		}
	}
	if res == nil {
		res = defaultResult(m)
	}
	return res, err
}

// defaultResult is a valid result of member m.
func defaultResult(m Member) any {
	switch specByName[m].result {
	case resultRead, resultPageText:
		return ReadResult{}
	case resultScoped:
		return &BrowserScopedReadV1{BrowserReadV1: BrowserReadV1{Version: 1}}
	case resultDiagnostics:
		return &BrowserReadV1{Version: 1}
	case resultScript:
		return ""
	case resultImage:
		return Image{ImageURL: Text("data:image/png;base64,iVBORw0KGgo=")}
	case resultFile:
		return BrowserFileOutcome{Version: 1, Status: FileCompleted, Effect: EffectCompleted, Cleanup: CleanupCompleted}
	}
	return (*string)(nil)
}

func doAs[R any](f *fakeDriver, ctx context.Context, a Arguments) (R, error) {
	v, err := f.do(ctx, a)
	r, _ := v.(R)
	return r, err
}

func (f *fakeDriver) Navigate(ctx context.Context, a NavigateArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) ReadPage(ctx context.Context, a ReadPageArgs) (ReadResult, error) {
	return doAs[ReadResult](f, ctx, a)
}
func (f *fakeDriver) GetPageText(ctx context.Context, a GetPageTextArgs) (ReadResult, error) {
	return doAs[ReadResult](f, ctx, a)
}
func (f *fakeDriver) Find(ctx context.Context, a FindArgs) (ReadResult, error) {
	return doAs[ReadResult](f, ctx, a)
}
func (f *fakeDriver) Click(ctx context.Context, a ClickArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) Type(ctx context.Context, a TypeArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) Key(ctx context.Context, a KeyArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) Scroll(ctx context.Context, a ScrollArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) ScrollTo(ctx context.Context, a ScrollToArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) WaitFor(ctx context.Context, a WaitForArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) SelectOption(ctx context.Context, a SelectOptionArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) Hover(ctx context.Context, a HoverArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) Screenshot(ctx context.Context, a ScreenshotArgs) (Image, error) {
	return doAs[Image](f, ctx, a)
}
func (f *fakeDriver) Zoom(ctx context.Context, a ZoomArgs) (Image, error) {
	return doAs[Image](f, ctx, a)
}
func (f *fakeDriver) NewTab(ctx context.Context, a NewTabArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) SwitchTab(ctx context.Context, a SwitchTabArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) CloseTab(ctx context.Context, a CloseTabArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) ReadPageScoped(ctx context.Context, a ReadPageScopedArgs) (*BrowserScopedReadV1, error) {
	return doAs[*BrowserScopedReadV1](f, ctx, a)
}
func (f *fakeDriver) ClickAt(ctx context.Context, a ClickAtArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) DragPath(ctx context.Context, a DragPathArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) HoldKeys(ctx context.Context, a HoldKeysArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) HoverAt(ctx context.Context, a HoverAtArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) SetChecked(ctx context.Context, a SetCheckedArgs) (*string, error) {
	return doAs[*string](f, ctx, a)
}
func (f *fakeDriver) ReadDiagnostics(ctx context.Context, a ReadDiagnosticsArgs) (*BrowserReadV1, error) {
	return doAs[*BrowserReadV1](f, ctx, a)
}
func (f *fakeDriver) RunScript(ctx context.Context, a RunScriptArgs) (string, error) {
	return doAs[string](f, ctx, a)
}
func (f *fakeDriver) UploadFile(ctx context.Context, a UploadFileArgs) (BrowserFileOutcome, error) {
	return doAs[BrowserFileOutcome](f, ctx, a)
}
func (f *fakeDriver) DownloadFile(ctx context.Context, a DownloadFileArgs) (BrowserFileOutcome, error) {
	return doAs[BrowserFileOutcome](f, ctx, a)
}

// confirmer returns a Confirm callback that logs "confirm" (or
// "confirm:before_read") and answers answer.
func (f *fakeDriver) confirmer(answer any) ConfirmFunc {
	return func(_ context.Context, req ConsentRequest) (any, error) {
		if req.Phase != "" {
			f.log.Add("confirm:" + string(req.Phase))
		} else {
			f.log.Add("confirm")
		}
		return answer, nil
	}
}

// policy returns a URL policy that logs "policy" and answers answer.
func (f *fakeDriver) policy(answer any) URLPolicyFunc {
	return func(context.Context, URLPolicyRequest) (any, error) {
		f.log.Add("policy")
		return answer, nil
	}
}

// validArgs are valid arguments of every member.
var validArgs = map[Member]string{
	Navigate:        `{"url":"https://example.com/next","tab_id":null}`,
	ReadPage:        `{"filter":"interactive","tab_id":null}`,
	GetPageText:     `{"tab_id":"t1"}`,
	Find:            `{"query":"Submit","tab_id":null}`,
	Click:           `{"target":"e1","tab_id":null}`,
	Type:            `{"text":"Zoë","target":"e2","tab_id":null}`,
	Key:             `{"keys":["Enter"],"tab_id":null}`,
	Scroll:          `{"direction":"down","amount":300,"tab_id":null}`,
	ScrollTo:        `{"target":"e3","tab_id":null}`,
	WaitFor:         `{"text":"Saved","timeout_ms":1000,"tab_id":null}`,
	SelectOption:    `{"target":"e4","values":["oslo"],"tab_id":null}`,
	Hover:           `{"target":"e5","tab_id":null}`,
	Screenshot:      `{"tab_id":null}`,
	Zoom:            `{"region":[0,0,100,50],"tab_id":null}`,
	NewTab:          `{"url":"https://example.com/"}`,
	ListTabs:        `{}`,
	SwitchTab:       `{"tab_id":"t1"}`,
	CloseTab:        `{"tab_id":"t1"}`,
	ReadPageScoped:  `{"tab_id":null,"root":null,"depth":4,"filter":"all"}`,
	ClickAt:         `{"tab_id":null,"x":10,"y":20,"button":"left","click_count":2,"keys":["Shift"]}`,
	DragPath:        `{"tab_id":null,"path":[{"x":1,"y":2},{"x":30,"y":40}],"keys":[]}`,
	HoldKeys:        `{"tab_id":null,"keys":["Shift"],"duration_ms":500}`,
	HoverAt:         `{"tab_id":null,"x":5,"y":6}`,
	SetChecked:      `{"tab_id":null,"target":"e6","checked":true}`,
	ReadDiagnostics: `{"tab_id":null,"source":"console","limit":10}`,
	RunScript:       `{"tab_id":null,"source":"document.title","timeout_ms":1000}`,
	UploadFile:      `{"grant_id":"g-1"}`,
	DownloadFile:    `{"grant_id":"g-2"}`,
}

// allowAll approves every URL.
func allowAll(context.Context, URLPolicyRequest) (any, error) { return true, nil }

// newToolset makes a toolset over f with every member enabled, confirm and
// the URL policy approving through f's logging helpers, plus opts.
func newToolset(t *testing.T, f *fakeDriver, opts ...Option) *BrowserToolset {
	t.Helper()
	base := []Option{WithMembers(AllMembers()...), WithConfirm(f.confirmer(true)), WithURLPolicy(f.policy(true))}
	ts, err := New(f, append(base, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ts
}

// output is one call's output as the model receives it.
type output struct {
	CallID string
	// Body is the decoded JSON text.
	Body struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
		State  *State          `json:"state"`
	}
	// Raw is the JSON text.
	Raw string
	// Image is the image that followed the text, if any, as JSON.
	Image map[string]any
	// Keys are the top-level keys of Body, to check absent fields.
	Keys []string
}

// decodeOutput reads an output's text back as JSON (runner/browser's tests
// check the Responses API item made of it).
func decodeOutput(t *testing.T, item Output) output {
	t.Helper()
	out := output{CallID: item.CallID}
	text := item.Text
	if item.Image != nil {
		out.Image = map[string]any{}
		raw, err := json.Marshal(item.Image)
		if err != nil {
			t.Fatalf("marshal image: %v", err)
		}
		if err := json.Unmarshal(raw, &out.Image); err != nil {
			t.Fatalf("unmarshal image %s: %v", raw, err)
		}
	}
	out.Raw = text
	if err := json.Unmarshal([]byte(text), &out.Body); err != nil {
		t.Fatalf("output text is not JSON: %q", text)
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal([]byte(text), &keys)
	for k := range keys {
		out.Keys = append(out.Keys, k)
	}
	return out
}

func (o output) has(key string) bool {
	for _, k := range o.Keys {
		if k == key {
			return true
		}
	}
	return false
}

// runCalls prepares and runs calls given as "member args" pairs, with call
// ids c1, c2, ...
func runCalls(t *testing.T, ts *BrowserToolset, calls ...[2]string) ([]output, Result, error) {
	t.Helper()
	var cs []Call
	for i, c := range calls {
		cs = append(cs, Call{CallID: fmt.Sprintf("c%d", i+1), Name: c[0], Arguments: c[1]})
	}
	b, err := ts.Prepare(cs)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	res, err := b.Run(context.Background())
	var outs []output
	for _, o := range res.Outputs {
		outs = append(outs, decodeOutput(t, o))
	}
	return outs, res, err
}

// runOne runs one call of member m with args and expects no stopping error.
func runOne(t *testing.T, ts *BrowserToolset, m Member, args string) (output, CallRecord) {
	t.Helper()
	outs, res, err := runCalls(t, ts, [2]string{string(m), args})
	if err != nil {
		t.Fatalf("%s: Run: %v", m, err)
	}
	if len(outs) != 1 || len(res.Calls) != 1 {
		t.Fatalf("%s: %d outputs and %d records, want 1", m, len(outs), len(res.Calls))
	}
	return outs[0], res.Calls[0]
}

func joined(log []string) string { return strings.Join(log, " ") }
