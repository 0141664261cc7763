//go:build linux && cgo

// Command agentd is the guest daemon: it performs computer actions on an X11
// display and serves screenshots over an authenticated websocket.
package main

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

func main() {
	if len(os.Args) > 1 && os.Args[1] == "app" {
		// It returns only when it could not exec the application.
		fmt.Fprintln(os.Stderr, "agentd:", runApp(os.Args[2:]))
		os.Exit(1)
	}
	if len(os.Args) > 1 && os.Args[1] == "x-wait" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := xwait.Main(ctx, os.Args[2:], os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentd:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		os.Exit(1)
	}
}

func run() error {
	display := flag.String("display", os.Getenv("DISPLAY"), "X display to drive (default $DISPLAY)")
	listen := flag.String("listen", "127.0.0.1:7010", "TCP address to listen on (loopback or the container's own address; empty: none)")
	socket := flag.String("socket", "", "also listen on this unix socket (created 0600)")
	tokenFile := flag.String("token-file", "", "file holding the token, mode 0600 (default: $"+agentd.TokenEnv+")")
	addrFile := flag.String("addr-file", "", "write the TCP address actually listened on to this file (for --listen 127.0.0.1:0)")
	scrollStep := flag.Int("scroll-px-per-step", 0, "pixels of scroll_x/scroll_y per wheel step (default: the executor's)")
	captureMethod := flag.String("capture", "auto", "capture method: auto, shm, getimage or kbinani")
	code := flag.Bool("code", false, "serve exec: Python code with pyautogui, run in a worker per session (needs python3 and python3-pil)")
	codePython := flag.String("code-python", codeexec.DefaultPython, "the Python interpreter of --code")
	codeDir := flag.String("code-dir", "", "where --code makes each session's private directory (default: the temporary directory)")
	withBrowser := flag.Bool("browser", false, "also start Chromium on the display and serve the browser toolset's calls")
	browserUser := flag.String("browser-user", "", "the user Chromium runs as (required when agentd runs as root; default: agentd's own)")
	idleTimeout := flag.Duration("idle-timeout", 60*time.Second, "close a connection idle this long between requests, or slower than this (at most 10s) to send a request's header; websocket sessions are not affected")
	flag.Parse()

	logger := log.New(os.Stderr, "agentd: ", log.LstdFlags|log.Lmicroseconds)
	if *display == "" {
		return errors.New("no display: pass --display or set DISPLAY")
	}
	if *idleTimeout <= 0 {
		return errors.New("--idle-timeout must be positive")
	}
	if *listen == "" && *socket == "" {
		return errors.New("nothing to listen on: pass --listen and/or --socket")
	}
	token, err := agentd.LoadToken(*tokenFile)
	if err != nil {
		return err
	}
	if *listen != "" {
		if err := agentd.CheckListenAddr(*listen, len(token) > 0); err != nil {
			return err
		}
	}

	method := capture.Method(*captureMethod)
	if method == "auto" {
		method = capture.MethodAuto
	}
	screen, err := capture.Open(*display, capture.Options{Method: method})
	if err != nil {
		return fmt.Errorf("open display %s for capture: %w", *display, err)
	}
	defer screen.Close()
	input, err := xtest.Open(*display)
	if err != nil {
		return fmt.Errorf("open display %s for input: %w", *display, err)
	}
	defer input.Close()
	exec := executor.New(input, executor.Options{
		Frames:              screen,
		ScrollPixelsPerStep: *scrollStep,
		Logf:                logger.Printf,
	})
	capabilities := []string{"batch", "view", "cancel", "release_all", "capture:" + string(screen.Method())}
	var codeSvc *codeexec.Service
	if *code {
		codeSvc, err = startCode(*display, *codePython, *codeDir, *tokenFile, *scrollStep, logger.Printf)
		if err != nil {
			return err
		}
		capabilities = append(capabilities, "exec")
	}
	var browserSrv agentd.Browser
	if *withBrowser {
		w, h := screen.Size()
		b, err := startBrowser(*display, w, h, *browserUser, logger)
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
	if *listen != "" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		listeners = append(listeners, ln)
		if *addrFile != "" {
			if err := writeFileAtomic(*addrFile, ln.Addr().String()+"\n"); err != nil {
				return err
			}
		}
		logger.Printf("listening on %s (display %s, capture %s)", ln.Addr(), *display, screen.Method())
	}
	if *socket != "" {
		_ = os.Remove(*socket)
		old := syscall.Umask(0o177)
		ln, err := net.Listen("unix", *socket)
		syscall.Umask(old)
		if err != nil {
			return fmt.Errorf("listen on socket: %w", err)
		}
		listeners = append(listeners, ln)
		logger.Printf("listening on unix:%s", *socket)
	}

	// Without an idle timeout a keep-alive connection that sends nothing
	// more is kept for good, a file descriptor each. A websocket session is
	// a hijacked connection: neither timeout applies to it.
	httpSrv := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: min(*idleTimeout, 10*time.Second),
		IdleTimeout:       *idleTimeout,
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
	if *socket != "" {
		_ = os.Remove(*socket)
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
