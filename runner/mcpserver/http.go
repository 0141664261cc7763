package mcpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/randhex"
)

// Listen listens on a loopback address only: the MCP specification asks a
// local server to bind to localhost, and anything else would offer the
// desktop to the network.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q: want 127.0.0.1:PORT: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--http %q: only a loopback address (127.0.0.1 or [::1]) is served", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	return ln, nil
}

// Guard lets a request reach next only with the bearer token and from no
// foreign web page: every request must carry "Authorization: Bearer
// token" (compared in constant time; 401 otherwise) and either no Origin
// or exactly the server's own (403 otherwise), as the MCP specification's
// security section asks against DNS rebinding. The SDK's handler checks
// the Host header too. The token is never echoed.
func Guard(next http.Handler, token, self string) http.Handler {
	want := []byte("Bearer " + token)
	own := "http://" + self
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && o != own {
			http.Error(w, "forbidden: a request from a web page of another origin", http.StatusForbidden)
			return
		}
		got := []byte(strings.TrimSpace(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentctl mcp"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// FreshDesktop starts a guest of b with spec, or takes one from a pool
// (backend.Fresh), for one MCP session; closing the desktop takes it down.
// What it does is told on log.
func FreshDesktop(ctx context.Context, b backend.Backend, spec backend.Spec, log io.Writer) (*Desktop, error) {
	spec.Desktop, spec.Progress = backend.BrowserAndEditor, func(line string) { fmt.Fprintf(log, "  %s\n", line) }
	inst, started, down, err := backend.Fresh(ctx, b, spec, log)
	if err != nil {
		return nil, err
	}
	d := inst.Describe()
	// The record and the log name the container (or VM) when there is one.
	name := d.Addr
	if started != nil && started.Describe().Instance != "" {
		name = fmt.Sprintf("%s guest %s (%s)", b.Name(), started.Describe().Instance, d.Addr)
	}
	token, err := os.ReadFile(d.TokenFile)
	if err != nil {
		down()
		return nil, fmt.Errorf("token file: %w", err)
	}
	c, err := guest.DialWith(ctx, d.Addr, strings.TrimSpace(string(token)), guest.DialOptions{Dial: backend.Dialer(inst)})
	if err != nil {
		down()
		return nil, err
	}
	var once sync.Once
	return &Desktop{Client: c, Addr: name, Token: strings.TrimSpace(string(token)), Close: func() {
		once.Do(func() { c.Close(); down() })
	}}, nil
}

// ListenAndServe serves s over Streamable HTTP at /mcp on the loopback address
// addr until ctx ends, with the bearer token token; an empty token is
// generated and printed once on log (tokenEnv names the variable that
// chooses it).
func (s *Server) ListenAndServe(ctx context.Context, addr string, idle time.Duration, token, tokenEnv string, log io.Writer) error {
	ln, err := Listen(addr)
	if err != nil {
		return err
	}
	generated := token == ""
	if generated {
		token = randhex.String(32)
	}
	self := ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/mcp", Guard(s.Handler(idle), token, self))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(log, "agentctl mcp: serving http://%s/mcp\n", self)
	if generated {
		fmt.Fprintf(log, "agentctl mcp: bearer token (shown once; set $%s to choose it): %s\n", tokenEnv, token)
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shut)
	s.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
