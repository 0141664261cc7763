// Package respserver is a Responses-API-compatible test server: it replays a
// script of turns in the real wire format, so the real openai-go client can
// be pointed at it with option.WithBaseURL (or OPENAI_BASE_URL) and no API
// key is needed. A turn's output may hold several items: computer calls,
// function calls, messages (with a phase), reasoning, server tools' result
// items (completed, failed, in progress), MCP approval requests; and the
// response may be incomplete or failed.
//
// Like the real API it checks every request: the computer tool is declared
// when the script uses it, a function the turn calls is declared and strict
// function schemas are closed, previous_response_id continues the last
// response, every outstanding call is answered exactly once by an output of
// its kind with its call_id (an MCP approval request by an
// mcp_approval_response with its id; with store false, every earlier call
// too, since the request re-sends the whole history), the acknowledged safety checks are
// exactly the call's pending ones, a screenshot is a PNG data URL with
// detail "original" (of the size a turn expects, if it says), and a
// function's output is text or input_text/input_image content. With store
// false it also measures each request's input (InputStats: bytes, images,
// placeholders, calls answered), refuses a call the input leaves unanswered
// and a current screenshot replaced by a placeholder. A violation
// is answered with HTTP 400 and an OpenAI-style error body, and recorded:
// Violations and Err let a test or an exercise assert none happened. Turns
// can inject failures: HTTP 500s, a truncated body, a delay, a hang-up.
// A request with "stream": true is answered with the API's Server-Sent
// Events (see Streaming), which the SDK's NewStreaming reads.
package respserver

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"maps"
	"net"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/scaling"
)

// SafetyCheck is a pending safety check a turn attaches to its call.
type SafetyCheck struct {
	ID      string `json:"id"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Usage is the token usage a response reports.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// Turn is one scripted response. Its output is, in order: a computer_call
// (with Actions), the Items, and a final assistant message (Message, always
// present in a turn with neither Actions nor Items).
type Turn struct {
	// Actions are the call's actions as raw JSON objects, sent as they are
	// (so a turn can carry bad input on purpose).
	Actions      []json.RawMessage
	SafetyChecks []SafetyCheck
	// Items are more output items, in order (see FunctionCall,
	// ComputerCall, Message, ServerItem, MCPApprovalRequest).
	Items []Item
	// Message is the final message.
	Message string
	// Status is the response's status; "" is completed. Reason is its
	// incomplete_details reason (incomplete) or error message (failed).
	Status string
	Reason string

	// ExpectImage, if set, is the size the screenshot in the request that
	// triggers this turn must have.
	ExpectImage scaling.Size
	// NoUsage omits usage from the response.
	NoUsage bool
	// Usage replaces the default usage (input 100+10×turn, output 20).
	Usage *Usage

	// Fail500 answers the first Fail500 attempts of this turn (after the
	// hang-ups) with HTTP 500
	// (with Retry-After-Ms: 1, so SDK retries are fast).
	Fail500 int
	// Truncate cuts the body of the first successful answer in half.
	Truncate bool
	// Delay holds the answer back (ended early if the client gives up); a
	// client that gives up gets nothing, and the turn is still to come.
	Delay time.Duration
	// Hangup closes the connection without an answer on the first Hangup
	// attempts of this turn, as a crashed server or a proxy would.
	Hangup int
	// Stream shapes the answer to a streaming request (see Streaming).
	Stream Streaming
}

// Call is a computer_call turn with the given raw JSON actions.
func Call(actions ...string) Turn {
	t := Turn{}
	for _, a := range actions {
		t.Actions = append(t.Actions, json.RawMessage(a))
	}
	return t
}

// Final is a final-message turn.
func Final(message string) Turn { return Turn{Message: message} }

// Item is one output item in the wire format, sent as it is. The server
// adds what a real one would when it is missing: an id, and for calls a
// fresh call_id and the status "completed". Calls (computer_call,
// function_call, custom_tool_call) and mcp_approval_request items must be
// answered by the next request.
type Item map[string]any

// Items is a turn made of the given output items.
func Items(items ...Item) Turn { return Turn{Items: items} }

// ComputerCall is a computer_call item with the given raw JSON actions.
func ComputerCall(actions ...string) Item {
	raw := make([]json.RawMessage, len(actions))
	for i, a := range actions {
		raw[i] = json.RawMessage(a)
	}
	return Item{"type": "computer_call", "actions": raw, "pending_safety_checks": []any{}}
}

// FunctionCall is a function_call item; arguments is the JSON text the
// model wrote, sent as it is.
func FunctionCall(name, arguments string) Item {
	return Item{"type": "function_call", "name": name, "arguments": arguments}
}

// Message is an assistant message item; phase "" is left out, else it is
// "commentary" or "final_answer".
func Message(text, phase string) Item {
	m := Item{"type": "message", "role": "assistant", "content": []any{map[string]any{
		"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{},
	}}}
	if phase != "" {
		m["phase"] = phase
	}
	return m
}

// Reasoning is a reasoning item with an encrypted content to be kept as is.
func Reasoning(encrypted string) Item {
	return Item{"type": "reasoning", "summary": []any{}, "encrypted_content": encrypted}
}

// ServerItem is a server tool's result item of the given type
// (web_search_call, file_search_call, code_interpreter_call,
// image_generation_call, mcp_call, mcp_list_tools) and status, with the
// fields a real one carries; more overrides or adds fields.
func ServerItem(typ, status string, more map[string]any) Item {
	it := Item{"type": typ, "status": status}
	switch typ {
	case "web_search_call":
		it["action"] = map[string]any{"type": "search", "query": "weather"}
	case "file_search_call":
		it["queries"], it["results"] = []any{"pickup"}, nil
	case "code_interpreter_call":
		it["code"], it["container_id"], it["outputs"] = "print(1)", "cntr_"+randomHex(12), []any{}
	case "image_generation_call":
		it["result"] = nil
	case "mcp_call":
		it["server_label"], it["name"], it["arguments"], it["output"] = "docs", "search", "{}", "found"
		delete(it, "status")
		if status != "" {
			it["status"] = status
		}
	case "mcp_list_tools":
		it["server_label"], it["tools"] = "docs", []any{}
		delete(it, "status")
	}
	for k, v := range more {
		it[k] = v
	}
	return it
}

// MCPApprovalRequest is an mcp_approval_request of server for tool name.
func MCPApprovalRequest(server, name, arguments string) Item {
	return Item{"type": "mcp_approval_request", "server_label": server, "name": name, "arguments": arguments}
}

// Request is one HTTP request the server received.
type Request struct {
	// Turn is the index of the turn it asked for.
	Turn int
	// Attempt counts the requests for that turn, from 1 (SDK retries
	// increase it).
	Attempt int
	// Status is the HTTP status answered; 0 for a hang-up.
	Status int
	// Body is the JSON the client sent.
	Body json.RawMessage
	// ResponseID is set when the turn was answered.
	ResponseID string
	// Handled is the server's own time on an answered request, from the
	// handler's start to the answer written (a scripted Delay included):
	// what a benchmark subtracts to leave the client's cost.
	Handled time.Duration
	// Input is what the request's input held.
	Input InputStats
}

// Server is a running scripted Responses server on 127.0.0.1.
type Server struct {
	srv *http.Server
	ln  net.Listener
	url string

	mu         sync.Mutex
	turns      []Turn
	next       int       // the turn the next request asks for
	lastID     string    // id of the last response sent
	lastTurn   int       // turn that produced lastID
	pending    []pending // calls awaiting an answer
	answered   []pending // calls of earlier responses, answered: a stateless request re-sends their outputs
	lastOutput []any     // the last response's output items, as JSON values
	computer   bool      // the script has computer calls
	attempts   []int
	requests   []Request
	violations []string
}

// Client is the SDK's client of the server at baseURL, as the tests use
// it: a placeholder key (the server asks for none) and no retries, so that
// every request the server sees is one the code under test made.
func Client(baseURL string) openai.Client {
	return openai.NewClient(option.WithBaseURL(baseURL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

// Start serves the script on a fresh loopback port. baseURL ends in /v1/ and
// suits option.WithBaseURL and OPENAI_BASE_URL.
func Start(turns ...Turn) (*Server, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		// Only a machine without loopback fails here; a test cannot go on.
		panic(fmt.Sprintf("respserver: listen on 127.0.0.1: %v", err))
	}
	s := &Server{ln: ln, turns: turns, attempts: make([]int, len(turns)), lastTurn: -1}
	for _, t := range turns {
		s.computer = s.computer || len(t.Actions) > 0
		for _, it := range t.Items {
			s.computer = s.computer || it["type"] == "computer_call"
		}
	}
	s.url = "http://" + ln.Addr().String() + "/v1/"
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/responses", s.handle)
	mux.HandleFunc("/responses", s.handle)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.violation(w, http.StatusNotFound, "invalid_request_error", fmt.Sprintf("unknown path %s %s", r.Method, r.URL.Path))
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, s.url
}

// URL is the base URL Start returned.
func (s *Server) URL() string { return s.url }

// Close stops the server and drops open connections.
func (s *Server) Close() { _ = s.srv.Close() }

// Violations are the problems found in requests, in order.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.violations)
}

// Err is nil when no request broke the rules, else an error listing them.
func (s *Server) Err() error {
	v := s.Violations()
	if len(v) == 0 {
		return nil
	}
	return fmt.Errorf("respserver: %d violation(s): %s", len(v), strings.Join(v, "; "))
}

// Requests are the requests received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Attempts is how many requests asked for turn i.
func (s *Server) Attempts(i int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.attempts) {
		return 0
	}
	return s.attempts[i]
}

// Served is how many turns have been answered.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// request is the part of a create-response body the server checks.
type request struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Tools              []json.RawMessage `json:"tools"`
	Stream             bool              `json:"stream"`
	Store              *bool             `json:"store"`
}

// pending is an output item the next request must answer.
type pending struct {
	id     string // call_id, or the approval request's id
	answer string // the type of the answering item
	checks []string
	turn   int
}

type callOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output struct {
		Type     string `json:"type"`
		ImageURL string `json:"image_url"`
		FileID   string `json:"file_id"`
		Detail   string `json:"detail"`
	} `json:"output"`
	AcknowledgedSafetyChecks []struct {
		ID string `json:"id"`
	} `json:"acknowledged_safety_checks"`
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method != http.MethodPost {
		s.violation(w, http.StatusMethodNotAllowed, "invalid_request_error", "method "+r.Method+" not allowed on "+r.URL.Path)
		return
	}
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "Bearer ") || len(auth) == len("Bearer ") {
		s.violation(w, http.StatusUnauthorized, "invalid_request_error", "no API key provided (Authorization: Bearer ...)")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		s.violation(w, http.StatusBadRequest, "invalid_request_error", "reading the body: "+err.Error())
		return
	}

	s.mu.Lock()
	if s.next >= len(s.turns) {
		s.requests = append(s.requests, Request{Turn: s.next, Attempt: 1, Status: http.StatusBadRequest, Body: body})
		s.mu.Unlock()
		s.violation(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("a request after all %d turns of the script were served", len(s.turns)))
		return
	}
	i := s.next
	turn := s.turns[i]
	s.attempts[i]++
	attempt := s.attempts[i]
	problems := s.check(i, turn, body)
	rec := Request{Turn: i, Attempt: attempt, Body: body, Input: inspectBody(body)}
	if len(problems) > 0 {
		rec.Status = http.StatusBadRequest
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
		s.violation(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("turn %d: %s", i, strings.Join(problems, "; ")))
		return
	}
	if attempt <= turn.Hangup {
		rec.Status = 0
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // net/http drops the connection
	}
	if attempt <= turn.Hangup+turn.Fail500 {
		rec.Status = http.StatusInternalServerError
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
		w.Header().Set("Retry-After-Ms", "1")
		writeError(w, http.StatusInternalServerError, "server_error", "The server had an error while processing your request. Sorry about that!")
		return
	}
	s.mu.Unlock()

	if turn.Delay > 0 {
		select {
		case <-time.After(turn.Delay):
		case <-r.Context().Done():
			return
		}
	}

	s.mu.Lock()
	var prev string
	if i > 0 {
		prev = s.lastID
	}
	resp, calls := s.build(i, turn, prev)
	rec.Status = http.StatusOK
	rec.ResponseID = resp["id"].(string)
	s.requests = append(s.requests, rec)
	k := len(s.requests) - 1
	// The response exists once generated, even if its body is cut below.
	s.next++
	s.lastID, s.lastTurn = rec.ResponseID, i
	s.answered = append(s.answered, s.pending...)
	s.pending = calls
	s.lastOutput = jsonValue(resp["output"]).([]any)
	truncate := turn.Truncate && attempt == turn.Hangup+turn.Fail500+1
	s.mu.Unlock()

	if wantsStream(body) {
		if s.stream(w, r, resp, turn.Stream) {
			s.mu.Lock()
			s.requests[k].Handled = time.Since(start)
			s.mu.Unlock()
		}
		return
	}
	data, _ := json.Marshal(resp)
	if truncate {
		data = data[:len(data)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_"+randomHex(16))
	_, _ = w.Write(data)
	s.mu.Lock()
	s.requests[k].Handled = time.Since(start)
	s.mu.Unlock()
}

// check validates a request for turn i like the real API would. It runs
// under s.mu.
func (s *Server) check(i int, turn Turn, body []byte) []string {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return []string{"body is not a JSON object: " + err.Error()}
	}
	var problems []string
	if req.Model == "" {
		problems = append(problems, "model is required")
	}
	hasComputer := false
	functions := map[string]bool{}
	for _, raw := range req.Tools {
		var tool map[string]any
		if json.Unmarshal(raw, &tool) != nil {
			problems = append(problems, fmt.Sprintf("a tool is not a JSON object: %s", raw))
			continue
		}
		switch tool["type"] {
		case "computer":
			if len(tool) != 1 {
				problems = append(problems, fmt.Sprintf("the computer tool takes no parameters, got %s", raw))
			}
			hasComputer = true
		case "function":
			name, _ := tool["name"].(string)
			if functions[name] {
				problems = append(problems, fmt.Sprintf("function %q is declared twice", name))
			}
			functions[name] = true
			if tool["strict"] == true {
				problems = append(problems, strictSchema("function "+name, tool["parameters"])...)
			}
		}
	}
	if s.computer && !hasComputer {
		problems = append(problems, `tools must contain {"type":"computer"}`)
	}
	for _, it := range turn.Items {
		if name, _ := it["name"].(string); it["type"] == "function_call" && !functions[name] {
			problems = append(problems, fmt.Sprintf("the turn calls function %q, which the request does not declare", name))
		}
	}
	stateless := req.Store != nil && !*req.Store
	if stateless {
		problems = append(problems, unanswered(inspect(req.Input))...)
	}
	if i == 0 {
		if req.PreviousResponseID != nil {
			problems = append(problems, "the first request must not have previous_response_id")
		}
		if len(bytes.TrimSpace(req.Input)) == 0 || string(req.Input) == `""` || string(req.Input) == "[]" {
			problems = append(problems, "input is required")
		}
		return problems
	}
	switch {
	case stateless && req.PreviousResponseID != nil:
		problems = append(problems, "store is false: nothing was stored to continue with previous_response_id")
	case !stateless && (req.PreviousResponseID == nil || *req.PreviousResponseID != s.lastID):
		got := "none"
		if req.PreviousResponseID != nil {
			got = *req.PreviousResponseID
		}
		problems = append(problems, fmt.Sprintf("previous_response_id is %s, want %s", got, s.lastID))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return append(problems, "input must be a list of items answering the outstanding calls")
	}
	if stateless {
		problems = append(problems, s.checkResent(items)...)
	}
	answered := map[string]bool{}
	for _, raw := range items {
		var head struct {
			Type              string `json:"type"`
			CallID            string `json:"call_id"`
			ApprovalRequestID string `json:"approval_request_id"`
		}
		if json.Unmarshal(raw, &head) != nil {
			problems = append(problems, "an input item is not a JSON object")
			continue
		}
		id := head.CallID
		if head.Type == "mcp_approval_response" {
			id = head.ApprovalRequestID
		}
		var p *pending
		for k := range s.pending {
			if s.pending[k].id == id && s.pending[k].answer == head.Type {
				p = &s.pending[k]
			}
		}
		switch head.Type {
		case "computer_call_output", "function_call_output", "custom_tool_call_output", "mcp_approval_response":
		default:
			continue
		}
		if p == nil && stateless && slices.ContainsFunc(s.answered, func(a pending) bool { return a.id == id && a.answer == head.Type }) {
			// An older call's output, re-sent with the history: checked
			// when it was new; here only that it comes once.
			if answered[id] {
				problems = append(problems, fmt.Sprintf("call %s answered twice", id))
			}
			answered[id] = true
			continue
		}
		if p == nil {
			problems = append(problems, fmt.Sprintf("%s for unknown call %q", head.Type, id))
			continue
		}
		if answered[id] {
			problems = append(problems, fmt.Sprintf("call %s answered twice", id))
		}
		answered[id] = true
		switch head.Type {
		case "computer_call_output":
			var out callOutput
			if err := json.Unmarshal(raw, &out); err != nil {
				problems = append(problems, fmt.Sprintf("call %s: %v", id, err))
				continue
			}
			problems = append(problems, checkOutput(i, turn, *p, out)...)
			if stateless && isPlaceholder(out.Output.ImageURL) {
				problems = append(problems, fmt.Sprintf("call %s: its screenshot is a 1×1 placeholder; the request must carry the current observation", id))
			}
		case "function_call_output":
			problems = append(problems, checkFunctionOutput(id, raw)...)
		case "mcp_approval_response":
			var r struct {
				Approve *bool `json:"approve"`
			}
			if json.Unmarshal(raw, &r) != nil || r.Approve == nil {
				problems = append(problems, fmt.Sprintf("mcp_approval_response %s: approve must be a boolean", id))
			}
		}
	}
	for _, p := range s.pending {
		if !answered[p.id] {
			problems = append(problems, fmt.Sprintf("no %s answers %s", p.answer, p.id))
		}
	}
	if stateless {
		for _, p := range s.answered {
			if !answered[p.id] {
				problems = append(problems, fmt.Sprintf("store is false but the history lacks the %s of %s (turn %d)", p.answer, p.id, p.turn))
			}
		}
	}
	return problems
}

// checkResent checks that a stateless request carries every output item of
// the last response exactly as it was sent, in order: ids, encrypted
// content and container ids included.
func (s *Server) checkResent(items []json.RawMessage) []string {
	var sent []any
	for _, raw := range items {
		var v any
		_ = json.Unmarshal(raw, &v)
		sent = append(sent, v)
	}
	k := 0
	for _, want := range s.lastOutput {
		for k < len(sent) && !reflect.DeepEqual(sent[k], want) {
			k++
		}
		if k == len(sent) {
			id, _ := want.(map[string]any)["id"].(string)
			return []string{fmt.Sprintf("store is false but output item %s of the last response is not re-sent as it was (in order)", id)}
		}
		k++
	}
	return nil
}

// checkOutput checks one computer_call_output: acknowledged checks and the
// screenshot.
func checkOutput(i int, turn Turn, p pending, out callOutput) []string {
	var problems []string
	want := slices.Clone(p.checks)
	var got []string
	for _, c := range out.AcknowledgedSafetyChecks {
		got = append(got, c.ID)
	}
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(want, got) {
		problems = append(problems, fmt.Sprintf("call %s: acknowledged_safety_checks %v, pending were %v", out.CallID, got, want))
	}
	if out.Output.Type != "computer_screenshot" {
		problems = append(problems, fmt.Sprintf("call %s: output type %q, want computer_screenshot", out.CallID, out.Output.Type))
	}
	if out.Output.Detail != "original" {
		problems = append(problems, fmt.Sprintf("call %s: output detail %q, want original", out.CallID, out.Output.Detail))
	}
	const prefix = "data:image/png;base64,"
	if !strings.HasPrefix(out.Output.ImageURL, prefix) {
		return append(problems, fmt.Sprintf("call %s: image_url is not a PNG data URL", out.CallID))
	}
	data, err := base64.StdEncoding.DecodeString(out.Output.ImageURL[len(prefix):])
	if err != nil {
		return append(problems, fmt.Sprintf("call %s: image_url is not valid base64: %v", out.CallID, err))
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return append(problems, fmt.Sprintf("call %s: screenshot is not a PNG: %v", out.CallID, err))
	}
	if e := turn.ExpectImage; e != (scaling.Size{}) && (cfg.Width != e.W || cfg.Height != e.H) {
		problems = append(problems, fmt.Sprintf("call %s: screenshot is %dx%d, turn %d expects %dx%d", out.CallID, cfg.Width, cfg.Height, i, e.W, e.H))
	}
	return problems
}

// build makes the response of turn i in the real wire format. It returns
// the response and the calls it asks for.
func (s *Server) build(i int, turn Turn, prev string) (map[string]any, []pending) {
	var items []Item
	if len(turn.Actions) > 0 {
		c := ComputerCall()
		c["actions"] = turn.Actions
		checks := []any{}
		for _, sc := range turn.SafetyChecks {
			checks = append(checks, sc)
		}
		c["pending_safety_checks"] = checks
		items = append(items, c)
	}
	items = append(items, turn.Items...)
	if turn.Message != "" || len(items) == 0 {
		items = append(items, Message(turn.Message, ""))
	}
	var output []any
	var calls []pending
	for _, it := range items {
		out := maps.Clone(it)
		typ, _ := out["type"].(string)
		if _, ok := out["id"]; !ok {
			out["id"] = idPrefix(typ) + randomHex(24)
		}
		answer := ""
		switch typ {
		case "computer_call":
			answer = "computer_call_output"
		case "function_call":
			answer = "function_call_output"
		case "custom_tool_call":
			answer = "custom_tool_call_output"
		case "mcp_approval_request":
			calls = append(calls, pending{id: out["id"].(string), answer: "mcp_approval_response", turn: i})
		case "message":
			if _, ok := out["status"]; !ok {
				out["status"] = "completed"
			}
		}
		if answer != "" {
			if _, ok := out["call_id"]; !ok {
				out["call_id"] = "call_" + randomHex(12)
			}
			if _, ok := out["status"]; !ok {
				out["status"] = "completed"
			}
			p := pending{id: fmt.Sprint(out["call_id"]), answer: answer, turn: i}
			if checks, ok := out["pending_safety_checks"].([]any); ok {
				for _, c := range checks {
					switch c := c.(type) {
					case SafetyCheck:
						p.checks = append(p.checks, c.ID)
					case map[string]any:
						p.checks = append(p.checks, fmt.Sprint(c["id"]))
					}
				}
			}
			calls = append(calls, p)
		}
		output = append(output, out)
	}
	status := turn.Status
	if status == "" {
		status = "completed"
	}
	now := time.Now().Unix()
	resp := map[string]any{
		"id":                   "resp_" + randomHex(24),
		"object":               "response",
		"created_at":           now,
		"completed_at":         now,
		"status":               status,
		"error":                nil,
		"incomplete_details":   nil,
		"instructions":         nil,
		"max_output_tokens":    nil,
		"model":                "scripted",
		"output":               output,
		"parallel_tool_calls":  true,
		"previous_response_id": nil,
		"reasoning":            map[string]any{"effort": nil, "summary": nil},
		"store":                true,
		"temperature":          1.0,
		"text":                 map[string]any{"format": map[string]any{"type": "text"}},
		"tool_choice":          "auto",
		"tools":                []any{map[string]any{"type": "computer"}},
		"top_p":                1.0,
		"truncation":           "disabled",
		"metadata":             map[string]any{},
	}
	switch status {
	case "incomplete":
		resp["incomplete_details"] = map[string]any{"reason": turn.Reason}
	case "failed":
		resp["error"] = map[string]any{"code": "server_error", "message": turn.Reason}
	}
	if prev != "" {
		resp["previous_response_id"] = prev
	}
	if !turn.NoUsage {
		u := Usage{InputTokens: 100 + 10*int64(i), OutputTokens: 20}
		if turn.Usage != nil {
			u = *turn.Usage
		}
		if u.TotalTokens == 0 {
			u.TotalTokens = u.InputTokens + u.OutputTokens
		}
		resp["usage"] = map[string]any{
			"input_tokens":          u.InputTokens,
			"input_tokens_details":  map[string]any{"cached_tokens": 0},
			"output_tokens":         u.OutputTokens,
			"output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens":          u.TotalTokens,
		}
	}
	return resp, calls
}

// idPrefix is the prefix of an item id of type typ, as the API makes them.
func idPrefix(typ string) string {
	switch typ {
	case "computer_call":
		return "cu_"
	case "function_call":
		return "fc_"
	case "message":
		return "msg_"
	case "reasoning":
		return "rs_"
	case "web_search_call":
		return "ws_"
	case "file_search_call":
		return "fs_"
	case "code_interpreter_call":
		return "ci_"
	case "image_generation_call":
		return "ig_"
	case "mcp_approval_request":
		return "mcpr_"
	}
	if strings.HasPrefix(typ, "mcp_") {
		return "mcp_"
	}
	return "item_"
}

// strictSchema checks a strict function's parameters the way the API does:
// every object closes additionalProperties and requires all its properties.
func strictSchema(where string, schema any) []string {
	m, ok := schema.(map[string]any)
	if !ok {
		return []string{where + ": a strict schema must be an object"}
	}
	var problems []string
	if m["type"] == "object" {
		if m["additionalProperties"] != false {
			problems = append(problems, where+": additionalProperties must be false in strict mode")
		}
		props, _ := m["properties"].(map[string]any)
		required := map[string]bool{}
		if list, ok := m["required"].([]any); ok {
			for _, r := range list {
				required[fmt.Sprint(r)] = true
			}
		}
		names := slices.Sorted(maps.Keys(props))
		for _, name := range names {
			if !required[name] {
				problems = append(problems, fmt.Sprintf("%s: property %q must be required in strict mode", where, name))
			}
			problems = append(problems, strictSchema(where+"."+name, props[name])...)
		}
	}
	if items, ok := m["items"]; ok {
		problems = append(problems, strictSchema(where+"[]", items)...)
	}
	return problems
}

// checkFunctionOutput checks a function_call_output: text, or a list of
// input_text / input_image content.
func checkFunctionOutput(id string, raw json.RawMessage) []string {
	var out struct {
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(raw, &out) != nil || len(out.Output) == 0 {
		return []string{fmt.Sprintf("function_call_output %s has no output", id)}
	}
	var text string
	if json.Unmarshal(out.Output, &text) == nil {
		return nil
	}
	var parts []map[string]any
	if json.Unmarshal(out.Output, &parts) != nil {
		return []string{fmt.Sprintf("function_call_output %s: output is neither text nor a list of content", id)}
	}
	var problems []string
	for k, p := range parts {
		switch p["type"] {
		case "input_text":
			if _, ok := p["text"].(string); !ok {
				problems = append(problems, fmt.Sprintf("function_call_output %s: content %d has no text", id, k))
			}
		case "input_image":
			u, _ := p["image_url"].(string)
			f, _ := p["file_id"].(string)
			if u == "" && f == "" {
				problems = append(problems, fmt.Sprintf("function_call_output %s: image %d has neither image_url nor file_id", id, k))
			}
		default:
			problems = append(problems, fmt.Sprintf("function_call_output %s: content %d has type %v", id, k, p["type"]))
		}
	}
	return problems
}

// violation records a broken rule and answers it like the API does.
func (s *Server) violation(w http.ResponseWriter, status int, typ, msg string) {
	s.mu.Lock()
	s.violations = append(s.violations, msg)
	s.mu.Unlock()
	writeError(w, status, typ, msg)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil},
	})
}

// jsonValue is v as encoding/json decodes it, for comparing with requests.
func jsonValue(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
