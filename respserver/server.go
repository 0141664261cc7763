// Package respserver is a Responses-API-compatible test server: it replays a
// script of turns (computer calls or a final message) in the real wire
// format, so the real openai-go client can be pointed at it with
// option.WithBaseURL (or OPENAI_BASE_URL) and no API key is needed.
//
// Like the real API it checks every request: the computer tool is declared,
// previous_response_id continues the last response, every outstanding call
// is answered by a computer_call_output with its call_id, the acknowledged
// safety checks are exactly the pending ones, and the screenshot is a PNG
// data URL with detail "original" (of the size a turn expects, if it says).
// A violation is answered with HTTP 400 and an OpenAI-style error body, and
// recorded: Violations and Err let a test or an exercise assert none
// happened. Turns can inject failures: HTTP 500s, a truncated body, a delay.
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
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

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

// Turn is one scripted response. With Actions it is a computer_call;
// otherwise it is a final assistant message.
type Turn struct {
	// Actions are the call's actions as raw JSON objects, sent as they are
	// (so a turn can carry bad input on purpose).
	Actions      []json.RawMessage
	SafetyChecks []SafetyCheck
	// Message is the final message of a turn without actions.
	Message string

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
}

// Server is a running scripted Responses server on 127.0.0.1.
type Server struct {
	srv *http.Server
	ln  net.Listener
	url string

	mu         sync.Mutex
	turns      []Turn
	next       int      // the turn the next request asks for
	lastID     string   // id of the last response sent
	lastTurn   int      // turn that produced lastID
	pending    []string // call ids awaiting an output
	attempts   []int
	requests   []Request
	violations []string
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
	rec := Request{Turn: i, Attempt: attempt, Body: body}
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
	resp, callID := s.build(i, turn, prev)
	rec.Status = http.StatusOK
	rec.ResponseID = resp["id"].(string)
	s.requests = append(s.requests, rec)
	// The response exists once generated, even if its body is cut below.
	s.next++
	s.lastID, s.lastTurn = rec.ResponseID, i
	s.pending = nil
	if callID != "" {
		s.pending = []string{callID}
	}
	truncate := turn.Truncate && attempt == turn.Hangup+turn.Fail500+1
	s.mu.Unlock()

	data, _ := json.Marshal(resp)
	if truncate {
		data = data[:len(data)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_"+randomHex(16))
	_, _ = w.Write(data)
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
	if req.Stream {
		problems = append(problems, "stream is not supported by this server")
	}
	hasComputer := false
	for _, raw := range req.Tools {
		var tool map[string]any
		if json.Unmarshal(raw, &tool) == nil && tool["type"] == "computer" {
			if len(tool) != 1 {
				problems = append(problems, fmt.Sprintf("the computer tool takes no parameters, got %s", raw))
			}
			hasComputer = true
		}
	}
	if !hasComputer {
		problems = append(problems, `tools must contain {"type":"computer"}`)
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
	if req.PreviousResponseID == nil || *req.PreviousResponseID != s.lastID {
		got := "none"
		if req.PreviousResponseID != nil {
			got = *req.PreviousResponseID
		}
		problems = append(problems, fmt.Sprintf("previous_response_id is %s, want %s", got, s.lastID))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return append(problems, "input must be a list of items answering the outstanding computer call")
	}
	answered := map[string]bool{}
	for _, raw := range items {
		var out callOutput
		if json.Unmarshal(raw, &out) != nil || out.Type != "computer_call_output" {
			continue
		}
		if !slices.Contains(s.pending, out.CallID) {
			problems = append(problems, fmt.Sprintf("computer_call_output for unknown call_id %q", out.CallID))
			continue
		}
		if answered[out.CallID] {
			problems = append(problems, fmt.Sprintf("call %s answered twice", out.CallID))
		}
		answered[out.CallID] = true
		problems = append(problems, s.checkOutput(i, turn, out)...)
	}
	for _, id := range s.pending {
		if !answered[id] {
			problems = append(problems, fmt.Sprintf("no computer_call_output answers call %s", id))
		}
	}
	return problems
}

// checkOutput checks one computer_call_output: acknowledged checks and the
// screenshot.
func (s *Server) checkOutput(i int, turn Turn, out callOutput) []string {
	var problems []string
	var want, got []string
	for _, c := range s.turns[s.lastTurn].SafetyChecks {
		want = append(want, c.ID)
	}
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
// the response and its call_id ("" for a final message).
func (s *Server) build(i int, turn Turn, prev string) (map[string]any, string) {
	var output []any
	callID := ""
	if len(turn.Actions) > 0 {
		callID = "call_" + randomHex(12)
		checks := []any{}
		for _, c := range turn.SafetyChecks {
			checks = append(checks, c)
		}
		output = append(output, map[string]any{
			"type":                  "computer_call",
			"id":                    "cu_" + randomHex(24),
			"call_id":               callID,
			"actions":               turn.Actions,
			"pending_safety_checks": checks,
			"status":                "completed",
		})
	} else {
		output = append(output, map[string]any{
			"type":   "message",
			"id":     "msg_" + randomHex(24),
			"status": "completed",
			"role":   "assistant",
			"content": []any{map[string]any{
				"type": "output_text", "text": turn.Message, "annotations": []any{}, "logprobs": []any{},
			}},
		})
	}
	now := time.Now().Unix()
	resp := map[string]any{
		"id":                   "resp_" + randomHex(24),
		"object":               "response",
		"created_at":           now,
		"completed_at":         now,
		"status":               "completed",
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
	return resp, callID
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

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
