//go:build linux && cgo

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

	"github.com/agentd-dev/agentd/bench/probe"
)

// runBenchProbe is agentd as the measuring helper of `agentctl bench`,
// started with probe.Arg as its first argument: a hidden mode, not a flag,
// that serves no one but the bench, which starts it with the guest's
// DISPLAY. robotgo needs cgo, and agentd is the cgo binary a guest already
// has.
func runBenchProbe() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	display := os.Getenv("DISPLAY")
	if display == "" {
		return fmt.Errorf("no DISPLAY")
	}
	screen, err := probe.OpenScreen(ctx, display)
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
	return probe.Serve(ctx, os.Stdin, os.Stdout, screen.Probes, screen.Unavailable)
}

// robotgoCapture is robotgo's own whole-screen capture as its users call it.
func robotgoCapture() (image.Image, error) {
	img, err := robotgo.CaptureImg()
	if err != nil {
		return nil, fmt.Errorf("robotgo: %w", err)
	}
	return img, nil
}
