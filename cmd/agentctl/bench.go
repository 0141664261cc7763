package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/agentd-dev/agentd/bench"
)

func init() {
	register("bench", "measure agentd against scrot, import, xdotool, kbinani and robotgo on a local guest", runBench)
}

func runBench(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "--guest-start" {
		return benchGuestStart(ctx, args[1:])
	}
	opts, asJSON, err := parseBenchFlags(args)
	if err != nil {
		return err
	}
	opts.Progress = os.Stderr
	rep, err := bench.Run(ctx, opts)
	if err != nil {
		return err
	}
	if asJSON {
		return rep.WriteJSON(os.Stdout)
	}
	return rep.WriteTable(os.Stdout)
}

// parseBenchFlags reads and checks bench's flags before anything starts.
func parseBenchFlags(args []string) (bench.Options, bool, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the figures as JSON instead of a table")
	duration := fs.Duration("duration", bench.DefaultDuration, "time spent on each figure")
	sizes := fs.String("size", "1440x900,1920x1080", "screen sizes to measure, comma-separated; input is measured on the first")
	agentdPath := fs.String("agentd", "", "agentd binary (default: next to agentctl, else on $PATH)")
	if err := fs.Parse(args); err != nil {
		return bench.Options{}, false, err
	}
	if fs.NArg() != 0 {
		return bench.Options{}, false, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	list, err := bench.ParseSizes(*sizes)
	if err != nil {
		return bench.Options{}, false, err
	}
	opts := bench.Options{Sizes: list, Duration: *duration, AgentdPath: *agentdPath}
	if err := opts.Validate(); err != nil {
		return bench.Options{}, false, err
	}
	return opts, *asJSON, nil
}
