// Package mcpserver serves a guest desktop to any Model Context Protocol
// client (docs/design.md, "The MCP server"): the computer tool (the OpenAI
// computer tool's actions, in the image space of a fitted view) and, when
// the guest runs them, exec_py; over stdio or Streamable HTTP, through the
// official Go SDK.
//
// It is the same machinery as agentctl run, not a second one: each MCP
// session gets its own controller connection to agentd (a second session
// on the same guest is refused as busy by agentd, never queued), each call
// runs through runner.Toolset.Execute (strict validation of the whole call
// before anything runs, approvals that fail closed, keys and buttons
// released on failure or cancellation), a person's take over is enforced by
// agentd's lease, and each session writes a run record in the format of
// agentctl run. It is host-side code: pure Go, no agentd internals.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/runner"
)

// The toolsets a server may offer.
const (
	ToolsComputer = "computer"
	ToolsCode     = "code"
	ToolsBrowser  = "browser"
)

// Desktop is one MCP session's connection to its guest.
type Desktop struct {
	Client *guest.Client
	// Addr names the guest in the record (an address, never a token).
	Addr string
	// Token is agentd's token, for the console's live view only.
	Token string
	// Close ends the connection and, for a guest started for the session,
	// takes the guest down.
	Close func()
}

// Config configures a Server.
type Config struct {
	// Open connects a session to its guest. It is called at a session's
	// first tool call; a guest that already has a controller (another
	// session, another run) refuses it as busy.
	Open func(ctx context.Context) (*Desktop, error)
	// View is what the client sees of the screen (typically 1280×800,
	// fitted); coordinates are read in its image space.
	View wire.View
	// Tools lists the toolsets offered (ToolsComputer, ToolsCode,
	// ToolsBrowser).
	Tools []string
	// Origins are where the browser toolset may go (scheme://host[:port]
	// each; required with ToolsBrowser): navigate's and new_tab's URL are
	// checked against them, and the guest's Chromium refuses every other
	// load.
	Origins []string
	// Confirm asks before each action and each final screenshot: through
	// MCP elicitation when the client supports it, else Approve; without
	// either, every action is refused (fail closed).
	Confirm bool
	// Approve, when set, asks a person (the console page, the terminal)
	// about an action when the client cannot be asked.
	Approve func(ctx context.Context, a runner.ActionInfo) (any, error)
	// Ask, when set, asks a person (the console page, the terminal) about
	// an exec_py call (--confirm) or a browser call that needs consent,
	// when the client cannot be asked.
	Ask func(ctx context.Context, q Question) (bool, error)
	// RecordDir, when set, gets one run record per MCP session
	// (<timestamp>-<id>/, the format of agentctl run).
	RecordDir string
	// OnRecord, when set, learns each session's record folder name.
	OnRecord func(dir string)
	// Log gets operational messages (never tokens, never typed text).
	Log io.Writer
	// Version is reported to clients.
	Version string
}

// Question is what a person is asked when the client cannot be asked.
type Question struct {
	// Kind is "code" (an exec_py call) or "browser" (a browser call).
	Kind   string
	CallID string
	// Summary is the call in one line (typed text and a script's source by
	// their length only).
	Summary string
	// Text is the whole question as a terminal shows it (an exec_py call's
	// code in full).
	Text string
}

// Server is an MCP server over guests.
type Server struct {
	cfg     Config
	mcp     *mcp.Server
	origins browser.OriginSet

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session
	closed   bool
	wg       sync.WaitGroup // the sessions' closers

	images images // results' images on their way to a writer
}

// New returns a server offering cfg.Tools.
func New(cfg Config) (*Server, error) {
	if cfg.Open == nil {
		return nil, fmt.Errorf("mcpserver: no guest to open")
	}
	if len(cfg.Tools) == 0 {
		cfg.Tools = []string{ToolsComputer}
	}
	for _, t := range cfg.Tools {
		if t != ToolsComputer && t != ToolsCode && t != ToolsBrowser {
			return nil, fmt.Errorf("mcpserver: unknown toolset %q (known: computer, browser, code)", t)
		}
	}
	var origins browser.OriginSet
	if slices.Contains(cfg.Tools, ToolsBrowser) {
		var err error
		if origins, err = browser.ParseOrigins(cfg.Origins...); err != nil {
			return nil, fmt.Errorf("mcpserver: the browser toolset's allowed origins (--allow-origin, for example https://example.com): %w", err)
		}
	} else if len(cfg.Origins) > 0 {
		return nil, errors.New("mcpserver: allowed origins are for the browser toolset")
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, origins: origins, sessions: map[*mcp.ServerSession]*session{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "agentd", Title: "agentd: an isolated desktop", Version: cfg.Version},
		&mcp.ServerOptions{
			Instructions: instructions,
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		})
	if slices.Contains(cfg.Tools, ToolsComputer) {
		s.mcp.AddTool(computerTool(cfg.View), s.handle((*session).computer))
	}
	if slices.Contains(cfg.Tools, ToolsCode) {
		s.mcp.AddTool(execTool(), s.handle((*session).exec))
	}
	if slices.Contains(cfg.Tools, ToolsBrowser) {
		for _, m := range browser.DefaultMembers() {
			s.mcp.AddTool(browserTool(m), s.handle(func(x *session, ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
				return x.browserCall(ctx, req, m)
			}))
		}
	}
	return s, nil
}

const instructions = `An isolated Linux desktop (a guest: container, VM or private X server) driven by agentd. ` +
	`The computer tool performs the OpenAI computer tool's actions and answers with a settled screenshot; ` +
	`coordinates are in that screenshot's pixels. Take a screenshot first. The browser_ tools, when offered, ` +
	`drive the desktop's Chromium by page text and element refs, only on the allowed origins; calls that change ` +
	`the page need a person's approval. A person may hold the desktop ` +
	`(take over): calls are then refused, not queued, and the call after the hand back tells you what they did.`

// ServeStdio serves one session on standard input and output until the
// client closes it or ctx ends.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.Serve(ctx, os.Stdin, nopCloser{os.Stdout})
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Serve serves one session on a stream, newline-delimited JSON-RPC as over
// stdio, until the client closes it or ctx ends; then every session ends.
func (s *Server) Serve(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	err := s.mcp.Run(withSplice(ctx), &mcp.IOTransport{Reader: r, Writer: splicingWriter{im: &s.images, w: w}})
	s.Close()
	return err
}

// ServePipes serves one session over a pair of pipes in the background, as
// Serve serves a stdio client's: the client reads r and writes w. stop
// closes them and waits for the server to end.
func (s *Server) ServePipes(ctx context.Context) (r io.ReadCloser, w io.WriteCloser, stop func(), err error) {
	toServer, fromClient, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	toClient, fromServer, err := os.Pipe()
	if err != nil {
		toServer.Close()
		fromClient.Close()
		return nil, nil, nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(sctx, toServer, fromServer)
	}()
	return toClient, fromClient, func() {
		cancel()
		fromClient.Close()
		toClient.Close()
		<-served
		toServer.Close()
		fromServer.Close()
	}, nil
}

// Handler is the Streamable HTTP endpoint (one MCP session per client
// session). Wrap it with Guard: it checks nothing itself.
func (s *Server) Handler(idle time.Duration) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{SessionTimeout: idle})
	// The SDK connects a session with its first request's context (its
	// values reach the session's calls), and every response of the
	// session goes out through one of these requests' writers.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(splicingResponse{ResponseWriter: w, im: &s.images}, r.WithContext(withSplice(r.Context())))
	})
}

// Close ends every session: their guests are released (and fresh ones
// taken down) and their records finished.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	all := make([]*session, 0, len(s.sessions))
	for _, x := range s.sessions {
		all = append(all, x)
	}
	s.mu.Unlock()
	for _, x := range all {
		_ = x.ss.Close()
		x.end()
	}
	s.wg.Wait()
}

// session is the state of one MCP session, made at its first call.
func (s *Server) session(ss *mcp.ServerSession) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("the server is shutting down")
	}
	if x, ok := s.sessions[ss]; ok {
		return x, nil
	}
	x := &session{srv: s, ss: ss, id: randhex.String(3), calls: make(chan struct{}, 1)}
	s.sessions[ss] = x
	s.wg.Add(1)
	// The session's owner: it ends the session's guest and record when
	// the client goes away.
	go func() {
		defer s.wg.Done()
		_ = ss.Wait()
		x.end()
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
	}()
	return x, nil
}

// handle adapts a session's tool method to the SDK.
func (s *Server) handle(f func(*session, context.Context, *mcp.CallToolRequest) *mcp.CallToolResult) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		x, err := s.session(req.Session)
		if err != nil {
			return errorResult(err.Error()), nil
		}
		return s.images.stand(ctx, x, f(x, ctx, req)), nil
	}
}

// recordDir is a new session's record folder.
func (s *Server) recordDir() string {
	return filepath.Join(s.cfg.RecordDir, time.Now().Format("20060102-150405")+"-mcp-"+randhex.String(3))
}

func (s *Server) logf(format string, args ...any) {
	fmt.Fprintf(s.cfg.Log, "agentctl mcp: "+format+"\n", args...)
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
