package browser

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions/browser"
)

// checkStrict checks a schema object node is strict: additionalProperties
// false, every property required; it recurses into properties and items.
func checkStrict(t *testing.T, where string, s map[string]any) {
	t.Helper()
	if items, ok := s["items"].(map[string]any); ok {
		checkStrict(t, where+"[]", items)
	}
	if s["type"] != "object" {
		return
	}
	if s["additionalProperties"] != false {
		t.Errorf("%s: additionalProperties is %v", where, s["additionalProperties"])
	}
	props, _ := s["properties"].(map[string]any)
	var names []string
	for n, p := range props {
		names = append(names, n)
		checkStrict(t, where+"."+n, p.(map[string]any))
	}
	req, _ := s["required"].([]any)
	var required []string
	for _, r := range req {
		required = append(required, r.(string))
	}
	sort.Strings(names)
	sort.Strings(required)
	if !slices.Equal(names, required) {
		t.Errorf("%s: properties %v, required %v", where, names, required)
	}
}

// TestToolSchemas checks every member's function tool as sent: strict,
// every field of the decoder declared and required, nothing else.
func TestToolSchemas(t *testing.T) {
	for _, m := range browser.AllMembers() {
		tool := FunctionTool(m)
		wire, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Type        string         `json:"type"`
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Strict      bool           `json:"strict"`
			Parameters  map[string]any `json:"parameters"`
		}
		if err := json.Unmarshal(wire, &got); err != nil {
			t.Fatal(err)
		}
		if got.Type != "function" || got.Name != string(m) || !got.Strict || got.Description == "" {
			t.Errorf("%s: tool %s", m, wire)
		}
		checkStrict(t, string(m), got.Parameters)
		var props []string
		for n := range got.Parameters["properties"].(map[string]any) {
			props = append(props, n)
		}
		want := browser.ArgumentNames(m)
		sort.Strings(props)
		sort.Strings(want)
		if !slices.Equal(props, want) {
			t.Errorf("%s: schema properties %v, decoder fields %v", m, props, want)
		}
	}
	if tool := FunctionTool("nope"); tool.Name != "" {
		t.Errorf("a tool for a non-member: %+v", tool)
	}
}

// TestToolsFollowMembers checks Tools declares exactly the enabled members
// in the toolset's order, and Claims matches them.
func TestToolsFollowMembers(t *testing.T) {
	f := &pageDriver{}
	ts, err := browser.New(f, browser.WithMembers(browser.SetChecked, browser.ReadPage, browser.ListTabs), browser.WithConfirm(f.confirmer))
	if err != nil {
		t.Fatal(err)
	}
	var names []browser.Member
	for _, tool := range Tools(ts) {
		names = append(names, browser.Member(tool.OfFunction.Name))
	}
	if !slices.Equal(names, ts.Members()) || !slices.Equal(names, []browser.Member{browser.ReadPage, browser.ListTabs, browser.SetChecked}) {
		t.Fatalf("tools %v, members %v", names, ts.Members())
	}
	for _, m := range browser.AllMembers() {
		if ts.Claims(string(m)) != slices.Contains(names, m) {
			t.Errorf("Claims(%s) = %v", m, ts.Claims(string(m)))
		}
	}
}

// respondWith is a Responses API reply carrying function calls.
func respondWith(id string, calls ...[3]string) string {
	var out []string
	for _, c := range calls {
		args, _ := json.Marshal(c[2])
		out = append(out, `{"type":"function_call","id":"fc_`+c[0]+`","call_id":"`+c[0]+`","name":"`+c[1]+
			`","arguments":`+string(args)+`,"status":"completed"}`)
	}
	return `{"id":"` + id + `","object":"response","created_at":1,"status":"completed","model":"m",` +
		`"output":[` + strings.Join(out, ",") + `],"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}`
}

// TestThroughTheSDK runs one turn through the real openai-go client: the
// tools are declared in a request, the model's function calls are parsed by
// the SDK from a response, run, and their outputs sent in the next request.
// The local server records each request body as the SDK sent it.
func TestThroughTheSDK(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	replies := []string{
		respondWith("resp_1",
			[3]string{"call_a", "read_page", `{"filter":"interactive","tab_id":null}`},
			[3]string{"call_b", "click", `{"target":"e1","tab_id":null}`},
			[3]string{"call_c", "screenshot", `{"tab_id":null}`}),
		`{"id":"resp_2","object":"response","created_at":1,"status":"completed","model":"m","output":[],` +
			`"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, replies[n])
	}))
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test-key"), option.WithMaxRetries(0))

	f := &pageDriver{}
	ts, err := browser.New(f, browser.WithMembers(browser.ReadPage, browser.Click, browser.Screenshot), browser.WithConfirm(f.confirmer))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "m",
		Tools: Tools(ts),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Submit the form")},
	})
	if err != nil {
		t.Fatal(err)
	}
	var calls []browser.Call
	for _, item := range resp.Output {
		if item.Type == "function_call" && ts.Claims(item.Name) {
			calls = append(calls, CallOf(item.AsFunctionCall()))
		}
	}
	b, err := ts.Prepare(calls)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model:              "m",
		Tools:              Tools(ts),
		PreviousResponseID: openai.String(resp.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: InputItems(res)},
	}); err != nil {
		t.Fatal(err)
	}

	// The tools as the API received them.
	tools := bodies[0]["tools"].([]any)
	if len(tools) != 3 {
		t.Fatalf("tools %v", tools)
	}
	for i, want := range []string{"read_page", "click", "screenshot"} {
		tool := tools[i].(map[string]any)
		if tool["type"] != "function" || tool["name"] != want || tool["strict"] != true {
			t.Errorf("tool %d: %v", i, tool)
		}
		checkStrict(t, want, tool["parameters"].(map[string]any))
	}
	// The outputs as the API received them.
	input := bodies[1]["input"].([]any)
	if len(input) != 3 || bodies[1]["previous_response_id"] != "resp_1" {
		t.Fatalf("second request: %v", bodies[1])
	}
	for i, id := range []string{"call_a", "call_b", "call_c"} {
		item := input[i].(map[string]any)
		if item["type"] != "function_call_output" || item["call_id"] != id {
			t.Errorf("input %d: %v", i, item)
		}
	}
	first := input[0].(map[string]any)["output"].(string)
	if !strings.Contains(first, `"result":{"version":1,"text":"Pickup","elements":[{"ref":"e1","label":"Submit","role":"button"}]`) ||
		!strings.Contains(first, `"state":{"version":1,"tabs":[{"id":"t1","title":"Pickup form","url":"https://example.com","active":true}]}`) {
		t.Errorf("read_page output %s", first)
	}
	shot := input[2].(map[string]any)["output"].([]any)
	img := shot[1].(map[string]any)
	if shot[0].(map[string]any)["type"] != "input_text" || img["type"] != "input_image" ||
		img["image_url"] != "data:image/png;base64,iVBORw0KGgo=" || img["detail"] != "original" {
		t.Errorf("screenshot output %v", shot)
	}
	if got := f.log.Entries(); !slices.Equal(got, []string{"read_page", "state", "state", "confirm", "click", "state", "screenshot", "state"}) {
		t.Errorf("ran %v", got)
	}
}
