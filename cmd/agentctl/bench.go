package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/tools/bench"
)

func init() {
	register("bench", "measure agentd against scrot, import, xdotool, kbinani and robotgo on a local guest", runBench)
}

func runBench(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "--guest-start" {
		return benchGuestStart(ctx, args[1:])
	}
	opts, out, err := parseBenchFlags(args)
	if err != nil {
		return err
	}
	opts.Progress = os.Stderr
	rep, err := bench.Run(ctx, opts)
	if err != nil {
		return err
	}
	if out.guestRounds > 0 {
		if rep.GuestStart, err = fullBenchGuestStart(ctx, out.guestRounds); err != nil {
			return err
		}
	}
	if out.json {
		return rep.WriteJSON(os.Stdout)
	}
	if err := rep.WriteTable(os.Stdout); err != nil || rep.GuestStart == nil {
		return err
	}
	return rep.GuestStart.WriteTable(os.Stdout)
}

// benchOutput is what bench does besides bench.Run.
type benchOutput struct {
	json        bool
	guestRounds int
}

// fullBenchGuestStart measures a Docker guest's start after the rest, on
// the machine the rest left idle; without an engine or the image it says
// so instead.
func fullBenchGuestStart(ctx context.Context, rounds int) (*bench.GuestStart, error) {
	if missing := bench.DockerMissing(ctx); missing != "" {
		return &bench.GuestStart{Backend: "docker", Missing: missing}, nil
	}
	b, err := backend.Get("docker")
	if err != nil {
		return nil, err
	}
	return bench.MeasureGuestStart(ctx, b, rounds, os.Stderr)
}

// parseBenchFlags reads and checks bench's flags before anything starts.
func parseBenchFlags(args []string) (bench.Options, benchOutput, error) {
	var out benchOutput
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.BoolVar(&out.json, "json", false, "print the figures as JSON instead of a table")
	fs.IntVar(&out.guestRounds, "guest-rounds", 3, "cold and pooled Docker guest starts measured after the rest, each (0: none; needs a Docker engine and the agentd-guest image, else reported missing)")
	duration := fs.Duration("duration", bench.DefaultDuration, "time spent on each figure")
	sizes := fs.String("size", "1440x900,1920x1080", "screen sizes to measure, comma-separated; input is measured on the first")
	agentdPath := fs.String("agentd", "", "agentd binary (default: next to agentctl, else on $PATH)")
	if err := fs.Parse(args); err != nil {
		return bench.Options{}, out, err
	}
	if fs.NArg() != 0 {
		return bench.Options{}, out, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	list, err := bench.ParseSizes(*sizes)
	if err != nil {
		return bench.Options{}, out, err
	}
	opts := bench.Options{Sizes: list, Duration: *duration, AgentdPath: *agentdPath}
	if err := opts.Validate(); err != nil {
		return bench.Options{}, out, err
	}
	if out.guestRounds < 0 {
		return bench.Options{}, out, fmt.Errorf("--guest-rounds %d: want 0 or more", out.guestRounds)
	}
	return opts, out, nil
}
