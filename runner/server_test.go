package runner

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/tools/respserver"
)

func declare(t *testing.T, p responses.ToolUnionParam) Tool {
	t.Helper()
	st, err := ServerTool(p)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

var (
	webSearch   = responses.ToolUnionParam{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}
	interpreter = responses.ToolUnionParam{OfCodeInterpreter: &responses.ToolCodeInterpreterParam{
		Container: responses.ToolCodeInterpreterContainerUnionParam{OfString: openai.String("cntr_fixed")}}}
	imageGen = responses.ToolUnionParam{OfImageGeneration: &responses.ToolImageGenerationParam{}}
	docsMCP  = responses.ToolUnionParam{OfMcp: &responses.ToolMcpParam{ServerLabel: "docs", ServerURL: openai.String("https://mcp.example.test/sse")}}
)

// body decodes a request body's top-level fields.
func body(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestServerToolResultsKeptNative(t *testing.T) {
	ci := respserver.ServerItem("code_interpreter_call", "completed", map[string]any{"container_id": "cntr_kept"})
	for _, mode := range historyModes {
		t.Run(mode.name, func(t *testing.T) {
			ts, srv, d := setup(t,
				respserver.Items(respserver.ServerItem("web_search_call", "completed", nil), ci,
					respserver.Reasoning("gAAAA-encrypted"), respserver.ComputerCall(shot)),
				respserver.Final("done"))
			o := mode.opts()
			o.Tools = []Tool{declare(t, webSearch), declare(t, interpreter)}
			if _, err := ts.Run(context.Background(), o, CallOptions{}); err != nil {
				t.Fatal(err)
			}
			// respserver checks that a stateless request re-sends every item
			// exactly as it came (container id, encrypted content).
			noViolations(t, srv)
			if len(d.Calls()) != 1 {
				t.Fatalf("driver calls %v", d.kinds())
			}
			second := string(srv.Requests()[1].Body)
			if mode.stateless != strings.Contains(second, "cntr_kept") || mode.stateless != strings.Contains(second, "gAAAA-encrypted") {
				t.Fatalf("second request: %.400s", second)
			}
			if b := body(t, srv.Requests()[1].Body); mode.stateless && b["store"] != false {
				t.Fatalf("store not sent unchanged: %v", b["store"])
			}
		})
	}
}

func TestServerToolFailureStopsBeforeLocalCalls(t *testing.T) {
	for _, tc := range []struct{ typ, status string }{
		{"web_search_call", "failed"},
		{"web_search_call", "in_progress"},
		{"web_search_call", "searching"},
		{"code_interpreter_call", "incomplete"},
		{"code_interpreter_call", "interpreting"},
		{"mcp_call", "failed"},
	} {
		t.Run(tc.typ+" "+tc.status, func(t *testing.T) {
			var n, seen int
			ts, srv, d := setup(t, respserver.Call(shot),
				respserver.Items(respserver.ComputerCall(`{"type":"click","x":1,"y":1}`),
					respserver.FunctionCall("lookup_pickup", `{"reference":"A","days":1,"note":null}`),
					respserver.ServerItem(tc.typ, tc.status, nil)))
			o := opts()
			o.Tools = []Tool{declare(t, webSearch), declare(t, interpreter), declare(t, docsMCP),
				lookup(t, d, &n, &seen, func(pickupArgs) (Output, error) { return Text("x"), nil })}
			o.ApproveMCP = func(context.Context, MCPApprovalRequest) (any, error) { return true, nil }
			_, err := ts.Run(runCtx(), o, CallOptions{})
			noViolations(t, srv)
			if err == nil || !strings.Contains(err.Error(), tc.typ) || !strings.Contains(err.Error(), "before any local call") {
				t.Fatalf("err = %v", err)
			}
			if n != 0 || !slices.Equal(d.kinds(), []string{"screenshot"}) {
				t.Fatalf("a local call ran: function %d, driver %v", n, d.kinds())
			}
		})
	}
}

func TestStoreFalseWithImageGenerationRefused(t *testing.T) {
	ts, srv, d := setup(t, respserver.Final("done"))
	o := opts()
	o.Tools = []Tool{declare(t, imageGen)}
	o.Store = openai.Bool(false)
	if _, err := ts.Run(context.Background(), o, CallOptions{}); err == nil || !strings.Contains(err.Error(), "image generation") {
		t.Fatalf("err = %v", err)
	}
	if len(srv.Requests()) != 0 || len(d.Calls()) != 0 {
		t.Fatal("something ran")
	}
	// Unset store is sent as unset: the runner never turns it on.
	o.Store = param.Opt[bool]{}
	if _, err := ts.Run(context.Background(), o, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := body(t, srv.Requests()[0].Body)["store"]; ok {
		t.Fatal("the runner sent store on its own")
	}
}

func TestMCPApprovals(t *testing.T) {
	req := respserver.MCPApprovalRequest("docs", "delete_page", `{"page":"home"}`)
	for _, tc := range []struct {
		name    string
		approve func(context.Context, MCPApprovalRequest) (any, error)
		want    any    // the approve sent, or nil when the run stops
		err     string // the run's error
	}{
		{"approved", func(context.Context, MCPApprovalRequest) (any, error) { return true, nil }, true, ""},
		{"refused", func(context.Context, MCPApprovalRequest) (any, error) { return false, nil }, false, ""},
		{"missing callback", nil, nil, "no approve_mcp callback"},
		{"string true", func(context.Context, MCPApprovalRequest) (any, error) { return "true", nil }, nil, "a string, not true or false"},
		{"error", func(context.Context, MCPApprovalRequest) (any, error) { return true, errors.New("ui gone") }, nil, "callback failed"},
		{"panic", func(context.Context, MCPApprovalRequest) (any, error) { panic("boom") }, nil, "panicked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The final message beside the request is no consent.
			srv, url := respserver.Start(respserver.Turn{Items: []respserver.Item{req}, Message: "I deleted it, trust me"}, respserver.Final("done"))
			t.Cleanup(srv.Close)
			r := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey)))
			var seen MCPApprovalRequest
			o := RunOptions{Model: "m", Input: "tidy the docs", Tools: []Tool{declare(t, docsMCP)}}
			if tc.approve != nil {
				o.ApproveMCP = func(ctx context.Context, r MCPApprovalRequest) (any, error) {
					seen = r
					r.ID = "mcpr_forged"
					return tc.approve(ctx, r)
				}
			}
			_, err := r.Run(context.Background(), o)
			noViolations(t, srv)
			if tc.want == nil {
				var ae *ApprovalError
				if !errors.As(err, &ae) || ae.Kind != ApprovalMCP || !strings.Contains(err.Error(), tc.err) || len(srv.Requests()) != 1 {
					t.Fatalf("err = %v, %d requests", err, len(srv.Requests()))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if seen.ServerLabel != "docs" || seen.Name != "delete_page" || seen.Arguments != `{"page":"home"}` || !strings.HasPrefix(seen.ID, "mcpr_") {
				t.Fatalf("callback saw %+v", seen)
			}
			var b struct {
				Input []map[string]any `json:"input"`
			}
			_ = json.Unmarshal(srv.Requests()[1].Body, &b)
			if len(b.Input) != 1 || b.Input[0]["type"] != "mcp_approval_response" || b.Input[0]["approval_request_id"] != seen.ID || b.Input[0]["approve"] != tc.want {
				t.Fatalf("answer = %v, want approve %v bound to %s", b.Input, tc.want, seen.ID)
			}
		})
	}
}

func TestMCPRequestsAreNotRetried(t *testing.T) {
	srv, url := respserver.Start(respserver.Turn{Message: "done", Fail500: 1})
	t.Cleanup(srv.Close)
	r := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey), option.WithMaxRetries(3)))
	_, err := r.Run(context.Background(), RunOptions{Model: "m", Input: "x", Tools: []Tool{declare(t, docsMCP)}})
	if err == nil || srv.Attempts(0) != 1 {
		t.Fatalf("err %v after %d attempts: a request declaring MCP must not be retried", err, srv.Attempts(0))
	}
	// Without MCP the same client retries.
	srv2, url2 := respserver.Start(respserver.Turn{Message: "done", Fail500: 1})
	t.Cleanup(srv2.Close)
	r2 := NewRunner(openai.NewClient(option.WithBaseURL(url2), option.WithAPIKey(testKey), option.WithMaxRetries(3)))
	if _, err := r2.Run(context.Background(), RunOptions{Model: "m", Input: "x", Tools: []Tool{declare(t, webSearch)}}); err != nil || srv2.Attempts(0) != 2 {
		t.Fatalf("err %v after %d attempts", err, srv2.Attempts(0))
	}
}

func TestToolChoice(t *testing.T) {
	f, _ := NewFunction("lookup", "", func(context.Context, struct{}) (Output, error) { return Text("ok"), nil })
	mode := func(m responses.ToolChoiceOptions) responses.ResponseNewParamsToolChoiceUnion {
		return responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(m)}
	}
	for _, tc := range []struct {
		name   string
		choice responses.ResponseNewParamsToolChoiceUnion
		server bool
		ok     bool
	}{
		{"auto", mode(responses.ToolChoiceOptionsAuto), false, true},
		{"required, local tools only", mode(responses.ToolChoiceOptionsRequired), false, false},
		{"required with a server tool", mode(responses.ToolChoiceOptionsRequired), true, true},
		{"a function", responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "lookup"}}, true, false},
		{"the computer", responses.ResponseNewParamsToolChoiceUnion{OfHostedTool: &responses.ToolChoiceTypesParam{Type: "computer"}}, true, false},
		{"web search", responses.ResponseNewParamsToolChoiceUnion{OfHostedTool: &responses.ToolChoiceTypesParam{Type: "web_search_preview"}}, true, true},
		{"allowed, required, local only", responses.ResponseNewParamsToolChoiceUnion{OfAllowedTools: &responses.ToolChoiceAllowedParam{
			Mode: responses.ToolChoiceAllowedModeRequired, Tools: []map[string]any{{"type": "function", "name": "lookup"}}}}, true, false},
		{"allowed, required, with a server tool", responses.ResponseNewParamsToolChoiceUnion{OfAllowedTools: &responses.ToolChoiceAllowedParam{
			Mode: responses.ToolChoiceAllowedModeRequired, Tools: []map[string]any{{"type": "function", "name": "lookup"}, {"type": "web_search"}}}}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, srv, d := setup(t, respserver.Call(shot), respserver.Final("done"))
			o := opts()
			o.Tools = []Tool{f}
			if tc.server {
				o.Tools = append(o.Tools, declare(t, webSearch))
			}
			o.ToolChoice = tc.choice
			_, err := ts.Run(context.Background(), o, CallOptions{})
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), "could never end") || len(srv.Requests()) != 0 || len(d.Calls()) != 0 {
					t.Fatalf("err = %v, %d requests: want a refusal before the first request", err, len(srv.Requests()))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(tc.choice)
			for _, r := range srv.Requests() {
				got, _ := json.Marshal(body(t, r.Body)["tool_choice"])
				var a, b any
				_ = json.Unmarshal(want, &a)
				_ = json.Unmarshal(got, &b)
				if string(want) != "null" && !jsonEqual(a, b) {
					t.Fatalf("turn %d tool_choice %s, want %s", r.Turn, got, want)
				}
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestAppendUserText(t *testing.T) {
	ctl := &RunControl{}
	ts, srv, _ := setup(t,
		respserver.Call(shot),
		respserver.Items(respserver.FunctionCall("lookup_pickup", `{"reference":"A","days":1,"note":null}`), respserver.ComputerCall(shot)),
		respserver.Final("checked the other date"))
	var n, seen int
	o := opts()
	o.OnEvent = func(e Event) {
		// A person types while the second turn's calls run.
		if e.Kind == EventFunction {
			if err := ctl.AppendUserText("Please check the 14th instead."); err != nil {
				t.Error(err)
			}
		}
	}
	o.Tools = []Tool{lookup(t, nil, &n, &seen, func(pickupArgs) (Output, error) { return Text("x"), nil })}
	o.Control = ctl
	o.MaxSteps = 3
	res, err := ts.Run(runCtx(), o, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if res.Steps != 3 {
		t.Fatalf("steps %d: the text must not reset the budget", res.Steps)
	}
	var b struct {
		Input []map[string]any `json:"input"`
	}
	_ = json.Unmarshal(srv.Requests()[2].Body, &b)
	if len(b.Input) != 3 || b.Input[0]["type"] != "function_call_output" || b.Input[1]["type"] != "computer_call_output" ||
		b.Input[2]["role"] != "user" || b.Input[2]["content"] != "Please check the 14th instead." {
		t.Fatalf("third request input: %v", b.Input)
	}
	if err := ctl.AppendUserText(""); err == nil {
		t.Fatal("empty text accepted")
	}
}

func TestSupplyOutputs(t *testing.T) {
	ran := 0
	mk := func(name string, opts ...FunctionOption) *Function {
		f, err := NewFunction(name, "", func(context.Context, struct{}) (Output, error) { ran++; return Text("ran"), nil }, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ctl := &RunControl{}
	ts, srv, _ := setup(t,
		respserver.Call(shot),
		respserver.Items(respserver.FunctionCall("ask_person", `{}`), respserver.FunctionCall("fixed", `{}`), respserver.ComputerCall(shot)),
		respserver.Final("done"))
	var refusals []string
	o := opts()
	o.OnEvent = func(e Event) {
		if e.Kind != EventResponse || len(e.CallIDs) != 3 {
			return
		}
		ask, fixed, comp := e.CallIDs[0], e.CallIDs[1], e.CallIDs[2]
		for _, bad := range []map[string]Output{
			{fixed: Text("no")},      // its registration does not allow it
			{comp: Text("no")},       // a computer call never
			{"call_nope": Text("x")}, // not in this turn
			{ask: {}},                // an invalid output
		} {
			if err := ctl.SupplyOutputs(bad); err == nil {
				t.Errorf("supplied %v", bad)
			} else {
				refusals = append(refusals, err.Error())
			}
		}
		if err := ctl.SupplyOutputs(map[string]Output{ask: Text("the person said yes")}); err != nil {
			t.Error(err)
		}
	}
	o.Tools = []Tool{mk("ask_person", Replaceable()), mk("fixed")}
	o.Control = ctl
	if _, err := ts.Run(context.Background(), o, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if ran != 1 || len(refusals) != 4 {
		t.Fatalf("functions ran %d times (want only the fixed one), refusals %v", ran, refusals)
	}
	var b struct {
		Input []map[string]any `json:"input"`
	}
	_ = json.Unmarshal(srv.Requests()[2].Body, &b)
	if b.Input[0]["output"] != "the person said yes" || b.Input[1]["output"] != "ran" {
		t.Fatalf("outputs %v", b.Input)
	}
}

func TestContextManagementPassedThrough(t *testing.T) {
	compaction := respserver.Item{"type": "compaction", "encrypted_content": "enc-compacted-history"}
	ts, srv, _ := setup(t, respserver.Items(compaction, respserver.ComputerCall(shot)), respserver.Final("done"))
	o := opts()
	o.ContextManagement = []responses.ResponseNewParamsContextManagement{{Type: "compaction", CompactThreshold: openai.Int(200000)}}
	o.Store = openai.Bool(false)
	if _, err := ts.Run(context.Background(), o, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv) // the compaction item is re-sent as it was
	for _, r := range srv.Requests() {
		got, _ := json.Marshal(body(t, r.Body)["context_management"])
		if string(got) != `[{"compact_threshold":200000,"type":"compaction"}]` {
			t.Fatalf("turn %d context_management %s", r.Turn, got)
		}
	}
}

// TestMCPRequestOfAnUndeclaredServer: an approval request is bound to its
// server; one from a server the run did not declare is never answered.
func TestMCPRequestOfAnUndeclaredServer(t *testing.T) {
	srv, url := respserver.Start(respserver.Items(respserver.MCPApprovalRequest("elsewhere", "delete_page", `{}`)), respserver.Final("done"))
	t.Cleanup(srv.Close)
	asked := false
	r := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey)))
	_, err := r.Run(context.Background(), RunOptions{Model: "m", Input: "x", Tools: []Tool{declare(t, docsMCP)},
		ApproveMCP: func(context.Context, MCPApprovalRequest) (any, error) { asked = true; return true, nil }})
	if err == nil || !strings.Contains(err.Error(), `"mcp_approval_request"`) || asked || len(srv.Requests()) != 1 {
		t.Fatalf("err = %v, asked %v, %d requests", err, asked, len(srv.Requests()))
	}
}
