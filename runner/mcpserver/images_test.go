package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/internal/mcpraw"
)

// tricky is text JSON must escape (or that HTML-safe encoders escape),
// and Unicode.
const tricky = "Unicode é 日本語 🙂 𝄞; escapes: \" \\ / \n \t \x01 \x7f \u2028 \u2029 < > & </script> \ufffd"

// craftedResults are tool results as varied as the wire allows.
func craftedResults() []*mcp.CallToolResult {
	rng := rand.New(rand.NewPCG(3, 4))
	blob := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	big := blob(200_000)
	return []*mcp.CallToolResult{
		{Content: []mcp.Content{
			&mcp.ImageContent{Data: big, MIMEType: "image/png"},
			&mcp.TextContent{Text: tricky},
			// Lengths 1 and 2 (mod 3) end the base64 with padding.
			&mcp.ImageContent{Data: blob(1), MIMEType: "image/png", Annotations: &mcp.Annotations{Priority: 0.5, Audience: []mcp.Role{"user"}}},
			&mcp.ImageContent{Data: blob(2), MIMEType: "image/jpeg", Meta: mcp.Meta{"note": tricky}},
			// The same bytes twice, and a text shaped like a placeholder.
			&mcp.ImageContent{Data: big, MIMEType: "image/png"},
			&mcp.TextContent{Text: strings.Repeat("A", placeholderChars)},
		}, StructuredContent: map[string]any{"text": tricky, "n": 1.5, "list": []any{"<&>", nil, true, map[string]any{tricky: tricky}}}},
		{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "refused: " + tricky}}},
		{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{}, MIMEType: "image/png"}, &mcp.TextContent{}}},
		{Content: []mcp.Content{&mcp.ImageContent{Data: blob(3), MIMEType: "image/png"}}, Meta: mcp.Meta{"k": []any{tricky}}},
	}
}

// craftedServer serves craftedResults as tools crafted0..n through
// handle, as the server's own tools are; "fails" is a tool whose handler
// fails (a JSON-RPC error). spliced counts the calls whose context marked
// the fast path.
func craftedServer(t *testing.T, spliced *atomic.Int32) *Server {
	t.Helper()
	srv, err := New(Config{Open: func(context.Context) (*Desktop, error) { return nil, errors.New("no guest in this test") }})
	if err != nil {
		t.Fatal(err)
	}
	schema := map[string]any{"type": "object"}
	for i, res := range craftedResults() {
		srv.mcp.AddTool(&mcp.Tool{Name: fmt.Sprintf("crafted%d", i), InputSchema: schema},
			srv.handle(func(_ *session, ctx context.Context, _ *mcp.CallToolRequest) *mcp.CallToolResult {
				if ctx.Value(splicedKey{}) != nil {
					spliced.Add(1)
				}
				return res
			}))
	}
	srv.mcp.AddTool(&mcp.Tool{Name: "fails", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("failed: " + tricky)
	})
	return srv
}

// craftedCalls are the calls made: every crafted tool, the failing one and
// one that does not exist.
func craftedCalls() []string {
	var names []string
	for i := range craftedResults() {
		names = append(names, fmt.Sprintf("crafted%d", i))
	}
	return append(names, "fails", "missing")
}

func callParams(name string) json.RawMessage {
	return json.RawMessage(`{"name":"` + name + `","arguments":{}}`)
}

// TestImagesExact checks the images' fast path against the SDK's own
// encoding: over a stream (stdio) and over Streamable HTTP, the bytes a
// client gets are exactly those of the same results sent by the SDK alone,
// and they decode with the SDK's own decoder to the results made.
func TestImagesExact(t *testing.T) {
	want := craftedResults()
	t.Run("stdio", func(t *testing.T) {
		ctx := context.Background()
		var spliced, plain atomic.Int32
		fast := craftedServer(t, &spliced)
		r, w, stop, err := fast.ServePipes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		// The reference: the SDK's own transport, no fast path.
		ref := craftedServer(t, &plain)
		refR, refW, stopRef := pipesPlain(t, ref)
		defer stopRef()
		fc, err := mcpraw.Start(r, w, "exact")
		if err != nil {
			t.Fatal(err)
		}
		rc, err := mcpraw.Start(refR, refW, "exact")
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range craftedCalls() {
			got, err := fc.Call("tools/call", callParams(name))
			if err != nil {
				t.Fatal(err)
			}
			got = bytes.Clone(got)
			sdk, err := rc.Call("tools/call", callParams(name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, sdk) {
				t.Errorf("%s: the fast path's bytes differ from the SDK's:\n%s\n%s", name, clip(got), clip(sdk))
			}
			checkDecoded(t, name, got, sdk, want, i)
		}
		if n := spliced.Load(); n != int32(len(want)) {
			t.Errorf("%d of %d calls took the fast path", n, len(want))
		}
		if n := plain.Load(); n != 0 {
			t.Errorf("the reference took the fast path %d times", n)
		}
		if n := pendingImages(fast); n != 0 {
			t.Errorf("%d images still pending after their responses were written", n)
		}
	})
	t.Run("http", func(t *testing.T) {
		var spliced, plain atomic.Int32
		fast := craftedServer(t, &spliced)
		hs := httptest.NewServer(fast.Handler(0))
		defer hs.Close()
		ref := craftedServer(t, &plain)
		rs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ref.mcp }, nil))
		defer rs.Close()
		fh, rh := startHTTP(t, hs.URL), startHTTP(t, rs.URL)
		for i, name := range craftedCalls() {
			got, sdk := fh.call(t, i, name), rh.call(t, i, name)
			if !bytes.Equal(got, sdk) {
				t.Errorf("%s: the fast path's body differs from the SDK's:\n%s\n%s", name, clip(got), clip(sdk))
			}
			checkDecoded(t, name, sseData(t, got), sseData(t, sdk), want, i)
		}
		if n := spliced.Load(); n != int32(len(want)) {
			t.Errorf("%d of %d calls took the fast path", n, len(want))
		}
		if n := plain.Load(); n != 0 {
			t.Errorf("the reference took the fast path %d times", n)
		}
		// The SDK's own client reads the fast path's answer too.
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "exact", Version: "v0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "crafted0", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res.Content, want[0].Content) {
			t.Errorf("the SDK's client decoded another content")
		}
	})
}

// checkDecoded decodes got and sdk with the SDK's decoder: the same
// message, and for crafted tool i the result made.
func checkDecoded(t *testing.T, name string, got, sdk []byte, want []*mcp.CallToolResult, i int) {
	t.Helper()
	gm, err := jsonrpc.DecodeMessage(got)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sm, err := jsonrpc.DecodeMessage(sdk)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !reflect.DeepEqual(gm, sm) {
		t.Errorf("%s: decoded messages differ", name)
	}
	resp, ok := gm.(*jsonrpc.Response)
	if !ok {
		t.Fatalf("%s: %T, not a response", name, gm)
	}
	if i >= len(want) {
		if resp.Error == nil {
			t.Errorf("%s: no JSON-RPC error", name)
		}
		return
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	w := want[i]
	if res.IsError != w.IsError || !reflect.DeepEqual(res.Content, w.Content) {
		t.Errorf("%s: the decoded content is not the content made", name)
	}
	if w.StructuredContent != nil {
		a, _ := json.Marshal(res.StructuredContent)
		b, _ := json.Marshal(w.StructuredContent)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: structured content %s, want %s", name, a, b)
		}
	}
}

// pipesPlain serves srv's MCP with the SDK's own stream transport.
func pipesPlain(t *testing.T, srv *Server) (io.ReadCloser, io.WriteCloser, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.mcp.Run(ctx, &mcp.IOTransport{Reader: sr, Writer: sw})
	}()
	return cr, cw, func() {
		cancel()
		cw.Close()
		cr.Close()
		<-done
	}
}

func pendingImages(s *Server) int {
	s.images.mu.Lock()
	defer s.images.mu.Unlock()
	return len(s.images.pending)
}

func clip(b []byte) string {
	if len(b) > 400 {
		return string(b[:200]) + "…" + string(b[len(b)-200:])
	}
	return string(b)
}

// httpSession is a raw Streamable HTTP session: each body is read as sent.
type httpSession struct {
	url, id string
}

func startHTTP(t *testing.T, url string) *httpSession {
	t.Helper()
	h := &httpSession{url: url}
	resp := h.post(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+mcpraw.ProtocolVersion+`","capabilities":{},"clientInfo":{"name":"exact","version":"v0"}}}`)
	h.id = resp.Header.Get("Mcp-Session-Id")
	if h.id == "" {
		t.Fatal("no session id")
	}
	h.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return h
}

func (h *httpSession) call(t *testing.T, i int, name string) []byte {
	t.Helper()
	resp := h.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, callParams(name)))
	return resp.body
}

type httpResponse struct {
	Header http.Header
	body   []byte
}

func (h *httpSession) post(t *testing.T, body string) httpResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if h.id != "" {
		req.Header.Set("Mcp-Session-Id", h.id)
		req.Header.Set("Mcp-Protocol-Version", mcpraw.ProtocolVersion)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s: %s", resp.Status, b)
	}
	return httpResponse{Header: resp.Header, body: b}
}

// sseData is the one message of an event stream's body.
func sseData(t *testing.T, body []byte) []byte {
	t.Helper()
	for line := range bytes.SplitSeq(body, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			return d
		}
	}
	t.Fatalf("no data in %s", clip(body))
	return nil
}
