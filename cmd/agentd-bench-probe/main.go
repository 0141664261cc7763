//go:build linux && cgo

// Command agentd-bench-probe is the measuring helper of `agentctl bench`: run
// inside the guest with its DISPLAY, it times agentd's capture, scaling and
// encoding on their own, and the in-process capture libraries peers use, one
// sample per request over stdin and stdout (see tools/bench/probe and
// tools/bench/guestprobe). With the argument "desktop" it is the bench's
// deterministic desktop instead, the X client that witnesses input. It is a binary
// of its own so the production daemon carries none of it; robotgo needs cgo,
// like agentd.
package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-vgo/robotgo"

	"github.com/agentd-dev/agentd/tools/bench/guestprobe"
	"github.com/agentd-dev/agentd/tools/bench/probe"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "agentd-bench-probe:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	display := os.Getenv("DISPLAY")
	if display == "" {
		return fmt.Errorf("no DISPLAY")
	}
	if len(os.Args) > 1 && os.Args[1] == probe.DesktopMode {
		return guestprobe.ServeDesktop(ctx, display, os.Getenv("XAUTHORITY"), os.Args[2:], os.Stdin, os.Stdout)
	}
	screen, err := guestprobe.OpenScreen(ctx, display)
	if err != nil {
		return err
	}
	defer screen.Close()
	var buf bytes.Buffer
	screen.Probes[probe.RobotgoCapture] = func(context.Context) (int, error) {
		_, err := robotgoCapture()
		return 0, err
	}
	screen.Probes[probe.RobotgoPNG] = func(context.Context) (int, error) {
		img, err := robotgoCapture()
		if err != nil {
			return 0, err
		}
		buf.Reset()
		err = png.Encode(&buf, img)
		return buf.Len(), err
	}
	return guestprobe.Serve(ctx, os.Stdin, os.Stdout, screen.Probes, screen.Unavailable)
}

// robotgoCapture is robotgo's own whole-screen capture as its users call it.
func robotgoCapture() (image.Image, error) {
	img, err := robotgo.CaptureImg()
	if err != nil {
		return nil, fmt.Errorf("robotgo: %w", err)
	}
	return img, nil
}
