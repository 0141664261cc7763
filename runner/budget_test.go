package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// noisePNG is an incompressible w×h screenshot, like a busy desktop's.
func noisePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.Uint32())
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// memLedger keeps the last checkpoint in memory and stops the run at the
// checkpoint before request stopAt, as a process dying there would.
type memLedger struct {
	last   []byte
	stopAt int
}

func (m *memLedger) Save(data []byte) error {
	m.last = slices.Clone(data)
	var head struct {
		Phase string `json:"phase"`
		Step  int    `json:"step"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	if head.Phase == PhaseRequest && head.Step == m.stopAt {
		m.stopAt = 0
		return errCrash
	}
	return nil
}

// budgetScript is a long scripted run: a screenshot, then clicks, with
// reasoning, a function call, a commentary message and a pending safety
// check on the way, and a final message as its last turn.
func budgetScript(steps int) []respserver.Turn {
	turns := []respserver.Turn{respserver.Call(shot)}
	for len(turns) < steps-1 {
		click := fmt.Sprintf(`{"type":"click","x":%d,"y":5}`, len(turns)%50)
		switch len(turns) % 10 {
		case 3:
			turns = append(turns, respserver.Items(respserver.Reasoning(fmt.Sprintf("gAAAA-%d", len(turns))),
				respserver.ComputerCall(click), respserver.FunctionCall("lookup_pickup", `{"reference":"A","days":1,"note":null}`)))
		case 6:
			turns = append(turns, respserver.Turn{Actions: respserver.Call(click).Actions,
				SafetyChecks: []respserver.SafetyCheck{{ID: fmt.Sprintf("sc_%d", len(turns)), Code: "malicious_instructions", Message: "check"}}})
		case 8:
			turns = append(turns, respserver.Items(respserver.Message("looking at the form", "commentary"), respserver.ComputerCall(click)))
		default:
			turns = append(turns, respserver.Call(click))
		}
	}
	return append(turns, respserver.Final("done"))
}

// A 60-step local-history run with a budget of 3 images and a byte limit,
// stopped halfway and resumed: every request the server sees holds at most
// 3 images and the byte limit, its current screenshot, every call answered;
// the ledger keeps every screenshot whole.
func TestContextBudgetLongRun(t *testing.T) {
	const steps, limit = 60, 64_000
	ts, srv, d := setup(t, budgetScript(steps)...)
	d.png, d.size.W, d.size.H = noisePNG(t, 100, 100), 100, 100
	var n, seen int
	led := &memLedger{stopAt: steps / 2}
	o, calls := opts(), CallOptions{ApproveSafetyChecks: func(context.Context, CallInfo, []SafetyCheck) (any, error) { return true, nil }}
	o.MaxSteps, o.Store, o.Ledger = steps, openai.Bool(false), led
	o.ContextBudget = &ContextBudget{MaxImages: 3, MaxInputBytes: limit}
	o.Tools = []Tool{lookup(t, d, &n, &seen, func(pickupArgs) (Output, error) { return Text("Friday"), nil })}
	if _, err := ts.Run(runCtx(), o, calls); !errors.Is(err, errCrash) {
		t.Fatalf("the first part: %v, want the simulated crash", err)
	}
	cp, err := LoadCheckpoint(led.last)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ts.Resume(runCtx(), cp, o, calls)
	if err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	reqs := srv.Requests()
	if res.Steps != steps || len(reqs) != steps {
		t.Fatalf("%d steps, %d requests; want %d", res.Steps, len(reqs), steps)
	}
	placeholders := 0
	for i, r := range reqs {
		in := r.Input
		if in.Images > 3 || in.Bytes > limit || !in.Current {
			t.Errorf("request %d: %d images, %d bytes, current %v; want at most 3 images, %d bytes, the current screenshot", i+1, in.Images, in.Bytes, in.Current, limit)
		}
		if i > 0 && in.Images == 0 {
			t.Errorf("request %d carries no screenshot", i+1)
		}
		answered := map[string]bool{}
		for _, id := range in.Answered {
			answered[id] = true
		}
		for _, id := range in.Calls {
			if !answered[id] {
				t.Errorf("request %d: call %s unanswered", i+1, id)
			}
		}
		var body struct {
			Include []string `json:"include"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || !slices.Contains(body.Include, "reasoning.encrypted_content") {
			t.Errorf("request %d includes %v, want reasoning.encrypted_content", i+1, body.Include)
		}
		placeholders = max(placeholders, in.Placeholders)
	}
	if placeholders == 0 {
		t.Fatal("no screenshot was ever dropped: the budget was not tested")
	}
	// The ledger holds the whole history: every screenshot as it was sent
	// the first time.
	cp, err = LoadCheckpoint(led.last)
	if err != nil {
		t.Fatal(err)
	}
	var history []json.RawMessage
	if err := json.Unmarshal(cp.Input, &history); err != nil {
		t.Fatal(err)
	}
	whole, outputs := 0, 0
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(d.png)
	var items responses.ResponseInputParam
	for _, raw := range history {
		items = append(items, param.Override[responses.ResponseInputItemUnionParam](raw))
		var it struct {
			Type   string `json:"type"`
			Output struct {
				ImageURL string `json:"image_url"`
			} `json:"output"`
		}
		if json.Unmarshal(raw, &it) == nil && it.Type == "computer_call_output" {
			outputs++
			if it.Output.ImageURL == want {
				whole++
			}
		}
	}
	if outputs < steps-2 || whole != outputs {
		t.Fatalf("the ledger's history has %d computer outputs, %d with their screenshot whole", outputs, whole)
	}
	// The budget measures the input as the SDK sends it, to the byte.
	sent, err := o.ContextBudget.project(responses.ResponseNewParamsInputUnion{OfInputItemList: items})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(sent.OfInputItemList)
	if err != nil {
		t.Fatal(err)
	}
	if got := reqs[steps-1].Input.Bytes; len(raw) != got {
		t.Fatalf("the last request's input is %d bytes as sent, %d as the budget measures it", got, len(raw))
	}
}

// A budget the run cannot keep is refused before any request, saying why.
func TestContextBudgetRefusals(t *testing.T) {
	stateless := func(o *RunOptions) { o.Store = openai.Bool(false) }
	for name, tc := range map[string]struct {
		budget ContextBudget
		set    func(*RunOptions)
		want   string
	}{
		"with context management": {ContextBudget{MaxImages: 3}, func(o *RunOptions) {
			stateless(o)
			o.ContextManagement = []responses.ResponseNewParamsContextManagement{{Type: "compaction"}}
		}, "choose the API's compaction or the local budget"},
		"store unset": {ContextBudget{MaxImages: 3}, func(*RunOptions) {}, "needs Store false"},
		"store true":  {ContextBudget{MaxImages: 3}, func(o *RunOptions) { o.Store = openai.Bool(true) }, "needs Store false"},
		"a previous response": {ContextBudget{MaxImages: 3}, func(o *RunOptions) { stateless(o); o.PreviousResponseID = "resp_1" },
			"with PreviousResponseID"},
		"negative": {ContextBudget{MaxImages: -1}, stateless, "cannot be negative"},
		"no limit": {ContextBudget{}, stateless, "has no limit"},
		"too small for the task": {ContextBudget{MaxInputBytes: 10}, stateless,
			"the task alone takes 13 bytes, more than MaxInputBytes 10"},
		"too small for the first input": {ContextBudget{MaxInputBytes: 100}, func(o *RunOptions) {
			stateless(o)
			o.InputItems = responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("a long task description that does not fit", responses.EasyInputMessageRoleUser)}
		}, "more than MaxInputBytes 100"},
		"more current images than allowed": {ContextBudget{MaxImages: 1}, func(o *RunOptions) {
			stateless(o)
			o.InputItems = responses.ResponseInputParam{imageMessage(t, 8, 8), imageMessage(t, 8, 8)}
		}, "the current observation holds 2 images, more than MaxImages 1"},
	} {
		t.Run(name, func(t *testing.T) {
			ts, srv, d := setup(t, respserver.Final("done"))
			o := opts()
			tc.set(&o)
			o.ContextBudget = &tc.budget
			_, err := ts.Run(runCtx(), o, CallOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if n := len(srv.Requests()); n != 0 || len(d.Calls()) != 0 {
				t.Fatalf("%d requests and %d driver calls before the refusal", n, len(d.Calls()))
			}
		})
	}
}

// imageMessage is a user message showing a w×h PNG.
func imageMessage(t testing.TB, w, h int) responses.ResponseInputItemUnionParam {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	img := responses.ResponseInputContentParamOfInputImage(responses.ResponseInputImageDetailOriginal)
	img.OfInputImage.ImageURL = openai.String("data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()))
	return responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{img}, responses.EasyInputMessageRoleUser)
}

// FuzzContextBudget projects generated histories (computer calls, reasoning,
// functions answering with images) into generated budgets: the projection
// either keeps every item, in order, within both limits, with the current
// observation whole, or says why it cannot; it never fails a budget that
// holds the whole history.
func FuzzContextBudget(f *testing.F) {
	f.Add([]byte{12, 3, 0x10, 0x00, 7, 1, 9})
	f.Add([]byte{40, 1, 0x00, 0x20, 3})
	f.Add([]byte{2, 0, 0x00, 0x01})
	f.Add([]byte{5, 9, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, seed []byte) {
		if len(seed) < 4 {
			return
		}
		steps, maxImages, maxBytes := int(seed[0]%64), int(seed[1]%8), int(seed[2])<<8|int(seed[3])
		r := rand.New(rand.NewPCG(uint64(len(seed)), uint64(seed[len(seed)-1])))
		shot := func() string {
			return "data:image/png;base64," + base64.StdEncoding.EncodeToString(noisePNG(t, 1+r.IntN(12), 1+r.IntN(12)))
		}
		history := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("do the task", responses.EasyInputMessageRoleUser)}
		add := func(v any) {
			raw, _ := json.Marshal(v)
			history = append(history, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(raw)))
		}
		current := 0 // images of the last step's outputs
		for s := 0; s < steps; s++ {
			id := fmt.Sprintf("call_%d", s)
			if r.IntN(3) == 0 {
				add(map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_%d", s), "summary": []any{}, "encrypted_content": "gAAAA"})
			}
			add(map[string]any{"type": "computer_call", "id": "cu_" + id, "call_id": id, "actions": []any{map[string]any{"type": "screenshot"}},
				"pending_safety_checks": []any{map[string]any{"id": "sc_" + id, "code": "x", "message": "y"}}, "status": "completed"})
			fn := r.IntN(4) == 0
			if fn {
				add(map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "f" + id, "name": "look", "arguments": "{}"})
			}
			add(map[string]any{"type": "computer_call_output", "call_id": id, "acknowledged_safety_checks": []any{map[string]any{"id": "sc_" + id}},
				"output": map[string]any{"type": "computer_screenshot", "detail": "original", "image_url": shot()}})
			current = 1
			if fn {
				add(map[string]any{"type": "function_call_output", "call_id": "f" + id, "output": []any{
					map[string]any{"type": "input_text", "text": "seen"},
					map[string]any{"type": "input_image", "image_url": shot(), "detail": "original"}}})
				current = 2
			}
		}
		b := &ContextBudget{MaxInputBytes: maxBytes, MaxImages: maxImages}
		if maxBytes == 0 && maxImages == 0 {
			return
		}
		out, err := b.project(responses.ResponseNewParamsInputUnion{OfInputItemList: history})
		whole, _ := json.Marshal(history)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "context budget: ") {
				t.Fatalf("error %q does not say it is the budget", err)
			}
			if (maxBytes == 0 || maxBytes >= len(whole)+len(DroppedNote)+200) && (maxImages == 0 || maxImages >= current) {
				t.Fatalf("a budget of %d bytes and %d images, the whole history %d bytes, %d current images: %v",
					maxBytes, maxImages, len(whole), current, err)
			}
			return
		}
		sent := out.OfInputItemList
		raw, err := json.Marshal(sent)
		if err != nil {
			t.Fatal(err)
		}
		if maxBytes > 0 && len(raw) > maxBytes {
			t.Fatalf("%d bytes sent, the budget is %d", len(raw), maxBytes)
		}
		if len(sent) != len(history) && len(sent) != len(history)+1 {
			t.Fatalf("%d items sent of %d", len(sent), len(history))
		}
		type head struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		}
		heads := func(items responses.ResponseInputParam) []head {
			var hs []head
			for _, it := range items {
				raw, _ := json.Marshal(it)
				var h head
				_ = json.Unmarshal(raw, &h)
				hs = append(hs, h)
			}
			return hs
		}
		if got, want := heads(sent[:len(history)]), heads(history); !slices.Equal(got, want) {
			t.Fatalf("items sent %v, history %v", got, want)
		}
		st := inspectInput(t, raw)
		if maxImages > 0 && st.images > maxImages {
			t.Fatalf("%d images sent, the budget is %d", st.images, maxImages)
		}
		if steps > 0 && st.trailingReal < current {
			t.Fatalf("the last %d images are whole, the current observation has %d", st.trailingReal, current)
		}
	})
}

// inputStats are the images of an input as sent: those whole, and how many
// of the last ones are whole.
type inputStats struct{ images, trailingReal int }

func inspectInput(t *testing.T, raw []byte) inputStats {
	t.Helper()
	var items []map[string]any
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatal(err)
	}
	var real []bool
	for _, it := range items {
		if out, ok := it["output"].(map[string]any); ok {
			real = append(real, out["image_url"] != placeholderURL)
		}
		parts, _ := it["output"].([]any)
		if c, ok := it["content"].([]any); ok {
			parts = c
		}
		for _, p := range parts {
			if m, ok := p.(map[string]any); ok && m["type"] == "input_image" {
				real = append(real, true)
			}
		}
	}
	var st inputStats
	for _, ok := range real {
		if ok {
			st.images++
		}
	}
	for k := len(real) - 1; k >= 0 && real[k]; k-- {
		st.trailingReal++
	}
	return st
}
