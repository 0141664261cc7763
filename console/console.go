// Package console is the page a person uses to watch a run: the guest's
// desktop live (through agentd's watch role, which can never send input),
// the steps of the current and past runs from their run records, with each
// step's actions drawn on the screenshot the model saw, and evaluations as
// tables of tasks × trials, each trial's checkers' verdicts and its run's
// steps.
//
// It serves one page application from the host: Go templates and embedded
// plain JavaScript and CSS, on a loopback address. The URL it prints carries
// a one-time secret, exchanged on first load for an HttpOnly, SameSite=Strict
// cookie whose Path is the console's random prefix (cookies ignore ports:
// other local servers never get it); every request is checked for that
// cookie, for the Host header (against DNS rebinding) and for a same-origin
// Origin; there is no CORS and a strict Content-Security-Policy (see
// secure.go).
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/randhex"
)

//go:embed page.html static
var files embed.FS

// Guest is the desktop the live view watches.
type Guest struct {
	Addr  string
	Token string
	// Dial, if set, makes the connections to agentd (backend.Dialer);
	// Addr then only names the guest.
	Dial guest.DialFunc
}

// Config configures a console.
type Config struct {
	// Listen is the address to listen on; it must be a loopback address.
	// Empty: 127.0.0.1:0 (a free port).
	Listen string
	// RunsDir holds the run records (one folder per run), as agentctl run
	// writes them.
	RunsDir string
	// EvalsDir, if set, holds evaluations (agentctl eval's output folders,
	// each with its plan.json), listed as tables of tasks × trials.
	EvalsDir string
	// Guest, if set, is watched live.
	Guest *Guest
	// CurrentRun, if set, is the folder name (in RunsDir) of a run in
	// progress, shown first.
	CurrentRun string
	// Logf logs operational messages; never the secret or the cookie.
	Logf func(format string, args ...any)
}

// Server is a running console.
type Server struct {
	cfg  Config
	ln   net.Listener
	http *http.Server
	page *template.Template
	host string // the Host header every request must carry
	// base is the random path prefix every address of the console is
	// under, and its cookie's Path ("/" and 32 hex digits).
	base string
	auth auth

	questions questions
	ending    ending

	// live ends every live-view relay when the console closes.
	live    context.Context
	endLive context.CancelFunc
	relays  sync.WaitGroup
	done    chan error
}

// Start listens and serves the console until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("console: listen address %q: %w", cfg.Listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("console: listen address %q is not a loopback IP address: the console serves this machine only", cfg.Listen)
	}
	page, err := template.ParseFS(files, "page.html")
	if err != nil {
		return nil, fmt.Errorf("console: page template: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	s := &Server{cfg: cfg, ln: ln, page: page, host: ln.Addr().String(), base: "/" + randhex.String(16), done: make(chan error, 1)}
	s.auth = newAuth(randhex.String(32), randhex.String(32))
	s.live, s.endLive = context.WithCancel(context.Background())
	s.http = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() { s.done <- s.http.Serve(ln) }()
	return s, nil
}

// URL is the one-time address to open: it carries the secret, which the
// first load exchanges for the console's cookie.
func (s *Server) URL() string { return s.Base() + "/login?secret=" + s.auth.secret }

// Addr is the address the console listens on.
func (s *Server) Addr() string { return s.host }

// Base is the console's root URL, without the trailing slash: its page is
// Base()+"/", its API under Base()+"/api/".
func (s *Server) Base() string { return "http://" + s.host + s.base }

// Close stops the console and its live-view relays. After End it first
// waits briefly for the open pages to read the run's end.
func (s *Server) Close() error {
	s.awaitEndRead()
	s.endLive()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	s.relays.Wait()
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(files, "static")
	mux.HandleFunc("GET /{$}", s.servePage)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /api/runs", s.serveRuns)
	mux.HandleFunc("GET /api/runs/{id}", s.serveRun)
	mux.HandleFunc("GET /api/runs/{id}/{file}", s.serveRunFile)
	mux.HandleFunc("GET /api/evals", s.serveEvals)
	mux.HandleFunc("GET /api/evals/{id}", s.serveEval)
	mux.HandleFunc("GET /api/evals/{id}/{task}/{trial}", s.serveTrialRun)
	mux.HandleFunc("GET /api/evals/{id}/{task}/{trial}/{file}", s.serveTrialFile)
	mux.HandleFunc("GET /live", s.serveLive)
	mux.HandleFunc("GET /takeover", s.serveTakeover)
	mux.HandleFunc("GET /api/questions", s.serveQuestions)
	mux.HandleFunc("POST /api/questions/{id}", s.serveAnswer)
	return s.secure(mux)
}

func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	data := struct {
		Live       bool
		CurrentRun string
	}{s.cfg.Guest != nil, s.cfg.CurrentRun}
	if err := s.page.Execute(w, data); err != nil {
		s.cfg.Logf("console: page: %v", err)
	}
}
