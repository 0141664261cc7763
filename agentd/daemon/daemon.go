//go:build linux && cgo

// Package daemon is the agentd program: its subcommands and flags, and the
// wiring of capture, XTEST input, the executor, the code worker and the
// browser into agentd's server. cmd/agentd only calls Main.
package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/actions/browserrpc"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd"
	"github.com/agentd-dev/agentd/agentd/codeexec"
	"github.com/agentd-dev/agentd/agentd/executor"
	"github.com/agentd-dev/agentd/agentd/input/xtest"
	"github.com/agentd-dev/agentd/agentd/xwait"
	"github.com/agentd-dev/agentd/capture"
	"github.com/agentd-dev/agentd/capture/render"
)

// Main runs agentd with args (os.Args: the program's name first): `agentd
// app`, `agentd x-wait` or the daemon itself. Flag errors exit, as the
// standard command line's do.
func Main(args []string) error {
	if len(args) > 1 && args[1] == "app" {
		return App(args[2:])
	}
	if len(args) > 1 && args[1] == "x-wait" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return xwait.Main(ctx, args[2:], os.Stdout)
	}
	fs := flag.NewFlagSet(args[0], flag.ExitOnError)
	var o Options
	o.register(fs)
	_ = fs.Parse(args[1:])
	return Run(o)
}

// Options are agentd's flags.
type Options struct {
	Display, Listen, Socket, TokenFile, AddrFile string
	ScrollStep                                   int
	Capture                                      string
	Code                                         bool
	CodePython, CodeDir                          string
	Browser                                      bool
	BrowserUser                                  string
	IdleTimeout                                  time.Duration
}

func (o *Options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.Display, "display", os.Getenv("DISPLAY"), "X display to drive (default $DISPLAY)")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:7010", "TCP address to listen on (loopback or the container's own address; empty: none)")
	fs.StringVar(&o.Socket, "socket", "", "also listen on this unix socket (created 0600)")
	fs.StringVar(&o.TokenFile, "token-file", "", "file holding the token, mode 0600 (default: $"+agentd.TokenEnv+")")
	fs.StringVar(&o.AddrFile, "addr-file", "", "write the TCP address actually listened on to this file (for --listen 127.0.0.1:0)")
	fs.IntVar(&o.ScrollStep, "scroll-px-per-step", 0, "pixels of scroll_x/scroll_y per wheel step (default: the executor's)")
	fs.StringVar(&o.Capture, "capture", "auto", "capture method: auto, shm, getimage or kbinani")
	fs.BoolVar(&o.Code, "code", false, "serve exec: Python code with pyautogui, run in a worker per session (needs python3 and python3-pil)")
	fs.StringVar(&o.CodePython, "code-python", codeexec.DefaultPython, "the Python interpreter of --code")
	fs.StringVar(&o.CodeDir, "code-dir", "", "where --code makes each session's private directory (default: the temporary directory)")
	fs.BoolVar(&o.Browser, "browser", false, "also start Chromium on the display and serve the browser toolset's calls")
	fs.StringVar(&o.BrowserUser, "browser-user", "", "the user Chromium runs as (required when agentd runs as root; default: agentd's own)")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 60*time.Second, "close a connection idle this long between requests, or slower than this (at most 10s) to send a request's header; websocket sessions are not affected")
}

// check refuses options agentd cannot serve with, before it loads the
// token or opens the display.
func (o Options) check() error {
	switch {
	case o.Display == "":
		return errors.New("no display: pass --display or set DISPLAY")
	case o.IdleTimeout <= 0:
		return errors.New("--idle-timeout must be positive")
	case o.Listen == "" && o.Socket == "":
		return errors.New("nothing to listen on: pass --listen and/or --socket")
	}
	return nil
}

// Run serves agentd with o until SIGINT or SIGTERM.
func Run(o Options) error {
	logger := log.New(os.Stderr, "agentd: ", log.LstdFlags|log.Lmicroseconds)
	if err := o.check(); err != nil {
		return err
	}
	token, err := agentd.LoadToken(o.TokenFile)
	if err != nil {
		return err
	}
	if o.Listen != "" {
		if err := agentd.CheckListenAddr(o.Listen, len(token) > 0); err != nil {
			return err
		}
	}

	method := capture.Method(o.Capture)
	if method == "auto" {
		method = capture.MethodAuto
	}
	screen, err := capture.Open(o.Display, capture.Options{Method: method})
	if err != nil {
		return fmt.Errorf("open display %s for capture: %w", o.Display, err)
	}
	defer screen.Close()
	input, err := xtest.Open(o.Display)
	if err != nil {
		return fmt.Errorf("open display %s for input: %w", o.Display, err)
	}
	defer input.Close()
	exec := executor.New(input, executor.Options{
		Frames:              screen,
		ScrollPixelsPerStep: o.ScrollStep,
		Logf:                logger.Printf,
	})
	capabilities := []string{"batch", "view", "cancel", "release_all", "capture:" + string(screen.Method())}
	var codeSvc *codeexec.Service
	if o.Code {
		codeSvc, err = startCode(o.Display, o.CodePython, o.CodeDir, o.TokenFile, o.ScrollStep, logger.Printf)
		if err != nil {
			return err
		}
		capabilities = append(capabilities, "exec")
	}
	var browserSrv agentd.Browser
	if o.Browser {
		w, h := screen.Size()
		b, err := startBrowser(o.Display, w, h, o.BrowserUser, logger)
		if err != nil {
			return err
		}
		defer b.Close()
		browserSrv = browserrpc.Server{Driver: b}
		capabilities = append(capabilities, wire.CapabilityBrowser)
	}
	srv, err := agentd.New(agentd.Config{
		Token:  token,
		Screen: screen,
		Imager: &render.Renderer{Frames: screen},
		Exec:   exec,
		InputCheck: func(context.Context) error {
			_, _, err := input.ScreenSize()
			return err
		},
		Code:         codeSvc,
		Hold:         input,
		Browser:      browserSrv,
		Capabilities: capabilities,
		Logf:         logger.Printf,
	})
	if err != nil {
		return err
	}

	var listeners []net.Listener
	if o.Listen != "" {
		ln, err := net.Listen("tcp", o.Listen)
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		listeners = append(listeners, ln)
		if o.AddrFile != "" {
			if err := writeFileAtomic(o.AddrFile, ln.Addr().String()+"\n"); err != nil {
				return err
			}
		}
		logger.Printf("listening on %s (display %s, capture %s)", ln.Addr(), o.Display, screen.Method())
	}
	if o.Socket != "" {
		_ = os.Remove(o.Socket)
		old := syscall.Umask(0o177)
		ln, err := net.Listen("unix", o.Socket)
		syscall.Umask(old)
		if err != nil {
			return fmt.Errorf("listen on socket: %w", err)
		}
		listeners = append(listeners, ln)
		logger.Printf("listening on unix:%s", o.Socket)
	}

	// Without an idle timeout a keep-alive connection that sends nothing
	// more is kept for good, a file descriptor each. A websocket session is
	// a hijacked connection: neither timeout applies to it.
	httpSrv := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: min(o.IdleTimeout, 10*time.Second),
		IdleTimeout:       o.IdleTimeout,
		ErrorLog:          logger,
	}
	errc := make(chan error, len(listeners))
	for _, ln := range listeners {
		go func(ln net.Listener) { errc <- httpSrv.Serve(ln) }(ln)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
		logger.Printf("shutting down")
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = httpSrv.Shutdown(shutdownCtx)
	_ = srv.Shutdown(shutdownCtx)
	if err := exec.ReleaseAll(); err != nil {
		logger.Printf("release all on exit: %v", err)
	}
	if o.Socket != "" {
		_ = os.Remove(o.Socket)
	}
	return nil
}

func writeFileAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
