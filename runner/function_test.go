package runner

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/tools/respserver"
)

type pickupArgs struct {
	Reference string  `json:"reference" jsonschema:"the booking reference"`
	Days      int     `json:"days"`
	Note      *string `json:"note"`
}

func (a pickupArgs) Validate() error {
	if a.Days < 1 {
		return errors.New("days must be at least 1")
	}
	return nil
}

type ctxKey struct{}

// lookup is a function tool that counts its calls and records how many
// driver calls had happened when it ran.
func lookup(t *testing.T, d *fakeDriver, calls *int, driverCallsSeen *int, body func(pickupArgs) (Output, error)) *Function {
	t.Helper()
	f, err := NewFunction("lookup_pickup", "Find the pickup details of a booking.",
		func(ctx context.Context, a pickupArgs) (Output, error) {
			*calls++
			if ctx.Value(ctxKey{}) != "run" {
				t.Error("the function did not get the run's context")
			}
			if d != nil {
				*driverCallsSeen = len(d.Calls())
			}
			return body(a)
		})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func runCtx() context.Context { return context.WithValue(context.Background(), ctxKey{}, "run") }

func TestFunctionAndComputerCallInOneResponse(t *testing.T) {
	for _, functionFirst := range []bool{true, false} {
		name := "computer first"
		if functionFirst {
			name = "function first"
		}
		t.Run(name, func(t *testing.T) {
			fc := respserver.FunctionCall("lookup_pickup", `{"reference":"AB12","days":2,"note":null}`)
			cc := respserver.ComputerCall(`{"type":"click","x":3,"y":4}`)
			items := []respserver.Item{cc, fc}
			if functionFirst {
				items = []respserver.Item{fc, cc}
			}
			ts, srv, d := setup(t, respserver.Call(shot), respserver.Items(items...), respserver.Final("booked"))
			var n, seen int
			f := lookup(t, d, &n, &seen, func(a pickupArgs) (Output, error) {
				if a.Reference != "AB12" || a.Days != 2 || a.Note != nil {
					t.Errorf("args = %+v", a)
				}
				return Text(`{"name":"Zoë","time":"10:30"}`), nil
			})
			var events []Event
			o := opts()
			o.OnEvent = func(e Event) { events = append(events, e) }
			o.Tools = []Tool{f}
			res, err := ts.Run(runCtx(), o, CallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			noViolations(t, srv) // both calls answered, each by its kind
			want := 3            // the first screenshot, the click and its screenshot
			if functionFirst {
				want = 1
			}
			if n != 1 || seen != want {
				t.Fatalf("function ran %d times after %d driver calls, want once after %d", n, seen, want)
			}
			if len(res.CompletedCallIDs) != 3 {
				t.Fatalf("completed = %v", res.CompletedCallIDs)
			}
			var body struct {
				Tools []map[string]any `json:"tools"`
				Input []map[string]any `json:"input"`
			}
			_ = json.Unmarshal(srv.Requests()[2].Body, &body)
			if len(body.Tools) != 2 || body.Tools[1]["strict"] != true || body.Tools[1]["name"] != "lookup_pickup" {
				t.Fatalf("tools = %v", body.Tools)
			}
			order := []any{"computer_call_output", "function_call_output"}
			if functionFirst {
				slices.Reverse(order)
			}
			if len(body.Input) != 2 || body.Input[0]["type"] != order[0] || body.Input[1]["type"] != order[1] {
				t.Fatalf("outputs not in the model's order: %v", body.Input)
			}
			var kinds []EventKind
			for _, e := range events {
				if e.Kind == EventFunction {
					kinds = append(kinds, e.Kind)
					if e.Function.Name != "lookup_pickup" || e.Function.Error != "" {
						t.Fatalf("function event %+v", e.Function)
					}
				}
			}
			if len(kinds) != 1 {
				t.Fatalf("%d function events", len(kinds))
			}
		})
	}
}

func TestInvalidArgumentsNeverReachTheFunction(t *testing.T) {
	for _, tc := range []struct{ name, args, want string }{
		{"not JSON", `{"reference":`, "not JSON"},
		{"unknown field", `{"reference":"A","days":1,"note":null,"extra":1}`, `unexpected field "extra"`},
		{"missing field", `{"reference":"A","days":1}`, `missing field "note"`},
		{"wrong type", `{"reference":"A","days":"1","note":null}`, "arguments.days is string, want integer"},
		{"fraction for an integer", `{"reference":"A","days":1.5,"note":null}`, "want integer"},
		{"null for a string", `{"reference":null,"days":1,"note":null}`, "arguments.reference is null"},
		{"two values", `{"reference":"A","days":1,"note":null} {}`, "after the JSON value"},
		{"type's own Validate", `{"reference":"A","days":0,"note":null}`, "days must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A computer call comes first: nothing of the response runs.
			ts, srv, d := setup(t, respserver.Call(shot),
				respserver.Items(respserver.ComputerCall(`{"type":"click","x":3,"y":4}`), respserver.FunctionCall("lookup_pickup", tc.args)))
			var n, seen int
			o := opts()
			o.Tools = []Tool{lookup(t, d, &n, &seen, func(pickupArgs) (Output, error) { return Text("x"), nil })}
			_, err := ts.Run(runCtx(), o, CallOptions{})
			noViolations(t, srv)
			var be *BadInputError
			if !errors.As(err, &be) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "function lookup_pickup") {
				t.Fatalf("err = %v, want a BadInputError naming %q", err, tc.want)
			}
			if n != 0 || !slices.Equal(d.kinds(), []string{"screenshot"}) {
				t.Fatalf("function ran %d times, driver %v: nothing may run", n, d.kinds())
			}
		})
	}
}

func TestFunctionFailuresStopTheRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		body func(pickupArgs) (Output, error)
		want string
	}{
		{"error", func(pickupArgs) (Output, error) { return Output{}, errors.New("booking system down") }, "booking system down"},
		{"panic", func(pickupArgs) (Output, error) { panic("nil map") }, "panicked: nil map"},
		{"empty output", func(pickupArgs) (Output, error) { return Output{}, nil }, "invalid output: it is empty"},
		{"invalid UTF-8", func(pickupArgs) (Output, error) { return Text("\xff"), nil }, "not valid UTF-8"},
		{"image without source", func(pickupArgs) (Output, error) { return Output{Images: []Image{{Detail: "high"}}}, nil }, "neither a URL nor a file id"},
		{"image from a file path", func(pickupArgs) (Output, error) { return Output{Images: []Image{{URL: "file:///etc/passwd"}}}, nil }, "neither https nor a data URL"},
		{"unknown detail", func(pickupArgs) (Output, error) {
			return Output{Images: []Image{{FileID: "file_1", Detail: "huge"}}}, nil
		}, "unknown detail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := respserver.FunctionCall("lookup_pickup", `{"reference":"A","days":1,"note":"x"}`)
			ts, srv, d := setup(t, respserver.Call(shot),
				respserver.Items(respserver.ComputerCall(`{"type":"wait"}`), fc, respserver.ComputerCall(`{"type":"click","x":3,"y":4}`)),
				respserver.Final("done"))
			var n, seen int
			o := opts()
			o.Tools = []Tool{lookup(t, d, &n, &seen, tc.body)}
			_, err := ts.Run(runCtx(), o, CallOptions{})
			noViolations(t, srv)
			var fe *FunctionError
			if !errors.As(err, &fe) || fe.Name != "lookup_pickup" || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fe.CallID) {
				t.Fatalf("err = %v, want a FunctionError naming the call and %q", err, tc.want)
			}
			// It ran once; the call before it ran, the one after did not,
			// and no request was sent after it.
			if n != 1 || !slices.Equal(d.kinds(), []string{"screenshot", "wait", "screenshot"}) || len(srv.Requests()) != 2 {
				t.Fatalf("function ran %d times, driver %v, %d requests", n, d.kinds(), len(srv.Requests()))
			}
			var re *RunError
			if !errors.As(err, &re) || !slices.Contains(re.AttemptedCallIDs, fe.CallID) || slices.Contains(re.CompletedCallIDs, fe.CallID) {
				t.Fatalf("run error = %+v", re)
			}
		})
	}
}

func TestFunctionOutputWithImages(t *testing.T) {
	srv, url := respserver.Start(respserver.Items(respserver.FunctionCall("photo", `{}`)), respserver.Final("seen"))
	t.Cleanup(srv.Close)
	img := "data:image/png;base64," + base64.StdEncoding.EncodeToString(newFakeDriver(t, 4, 4).png)
	f, err := NewFunction("photo", "", func(context.Context, struct{}) (Output, error) {
		return Output{Text: "the photo", Images: []Image{{URL: img, Detail: "original"}, {FileID: "file_9"}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey)))
	res, err := r.Run(context.Background(), RunOptions{Model: "m", Input: "look", Tools: []Tool{f}})
	if err != nil || res.FinalMessage != "seen" {
		t.Fatalf("res %+v err %v", res, err)
	}
	noViolations(t, srv)
	var body struct {
		Input []struct {
			Output []map[string]any `json:"output"`
		} `json:"input"`
	}
	_ = json.Unmarshal(srv.Requests()[1].Body, &body)
	out := body.Input[0].Output
	if len(out) != 3 || out[0]["type"] != "input_text" || out[1]["type"] != "input_image" || out[1]["detail"] != "original" || out[2]["file_id"] != "file_9" {
		t.Fatalf("output = %v", out)
	}
}

func TestFunctionSchemas(t *testing.T) {
	type inner struct {
		Tags []string `json:"tags"`
	}
	type args struct {
		Name  string  `json:"name"`
		Inner inner   `json:"inner"`
		Score float64 `json:"score"`
		Skip  string  `json:"-"`
	}
	f, err := NewFunction("f", "", func(context.Context, args) (Output, error) { return Text("ok"), nil })
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(f.Params()[0].OfFunction.Parameters)
	want := `{"additionalProperties":false,"properties":{"inner":{"additionalProperties":false,"properties":{"tags":{"items":{"type":"string"},"type":"array"}},"required":["tags"],"type":"object"},"name":{"type":"string"},"score":{"type":"number"}},"required":["name","inner","score"],"type":"object"}`
	if string(got) != want {
		t.Fatalf("schema\n%s\nwant\n%s", got, want)
	}
	// An explicit schema must be strict.
	for _, bad := range []map[string]any{
		{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}, "required": []any{"a"}},
		{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}, "required": []any{}, "additionalProperties": false},
	} {
		if _, err := NewFunction("g", "", func(context.Context, map[string]any) (Output, error) { return Text("ok"), nil }, WithSchema(bad)); err == nil {
			t.Fatalf("a schema that is not strict was accepted: %v", bad)
		}
	}
	for _, name := range []string{"", "has space", strings.Repeat("a", 65)} {
		if _, err := NewFunction(name, "", func(context.Context, struct{}) (Output, error) { return Text("ok"), nil }); err == nil {
			t.Fatalf("name %q accepted", name)
		}
	}
	if _, err := NewFunction("h", "", func(context.Context, string) (Output, error) { return Text("ok"), nil }); err == nil {
		t.Fatal("a non-struct argument type was accepted")
	}
}

// declared is a tool that only declares params (as the browser toolset
// declares its members), claiming nothing.
type declared []responses.ToolUnionParam

func (d declared) Params() []responses.ToolUnionParam                           { return d }
func (declared) Claims(responses.ResponseOutputItemUnion) bool                  { return false }
func (declared) Prepare(*Step, responses.ResponseOutputItemUnion) (Call, error) { return nil, nil }

func TestFunctionNamesMustNotCollide(t *testing.T) {
	mk := func(name string) *Function {
		f, err := NewFunction(name, "", func(context.Context, struct{}) (Output, error) { return Text("ok"), nil })
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// The browser toolset's read_page, by name: runner/browser imports the
	// runner, so this package's tests cannot import it.
	readPage := responses.FunctionToolParam{Name: "read_page"}
	browserTools := declared{{OfFunction: &readPage}}
	for _, tc := range []struct {
		name  string
		tools []Tool
		ok    bool
	}{
		{"two functions, one name", []Tool{mk("lookup"), mk("lookup")}, false},
		{"a browser member's name", []Tool{browserTools, mk("read_page")}, false},
		{"browser_ prefix is fine", []Tool{browserTools, mk("browser_read_page")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, url := respserver.Start(respserver.Final("done"))
			t.Cleanup(srv.Close)
			r := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey)))
			_, err := r.Run(context.Background(), RunOptions{Model: "m", Input: "x", Tools: tc.tools})
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				noViolations(t, srv)
				return
			}
			if err == nil || !strings.Contains(err.Error(), "named") || len(srv.Requests()) != 0 {
				t.Fatalf("err = %v, %d requests: want a refusal before any request", err, len(srv.Requests()))
			}
		})
	}
}
