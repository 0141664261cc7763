package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/agentd-dev/agentd/guest/backend"
)

// Command is `agentctl bench` with args: Run's figures, then a Docker
// guest's start (unless --guest-rounds 0), written to out as a table or
// JSON; progress goes to log.
func Command(ctx context.Context, args []string, out, log io.Writer) error {
	opts, o, err := ParseFlags(args)
	if err != nil {
		return err
	}
	opts.Progress = log
	rep, err := Run(ctx, opts)
	if err != nil {
		return err
	}
	if o.GuestRounds > 0 {
		if rep.GuestStart, err = dockerGuestStart(ctx, o.GuestRounds, log); err != nil {
			return err
		}
	}
	if o.JSON {
		return rep.WriteJSON(out)
	}
	if err := rep.WriteTable(out); err != nil || rep.GuestStart == nil {
		return err
	}
	return rep.GuestStart.WriteTable(out)
}

// Output is what the command does besides Run.
type Output struct {
	JSON        bool
	GuestRounds int
}

// ParseFlags reads and checks the command's flags before anything starts.
func ParseFlags(args []string) (Options, Output, error) {
	var out Output
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.BoolVar(&out.JSON, "json", false, "print the figures as JSON instead of a table")
	fs.IntVar(&out.GuestRounds, "guest-rounds", 3, "cold and pooled Docker guest starts measured after the rest, each (0: none; needs a Docker engine and the agentd-guest image, else reported missing)")
	duration := fs.Duration("duration", DefaultDuration, "time spent on each figure")
	sizes := fs.String("size", "1440x900,1920x1080", "screen sizes to measure, comma-separated; input is measured on the first")
	agentdPath := fs.String("agentd", "", "agentd binary (default: next to agentctl, else on $PATH)")
	if err := fs.Parse(args); err != nil {
		return Options{}, out, err
	}
	if fs.NArg() != 0 {
		return Options{}, out, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	list, err := ParseSizes(*sizes)
	if err != nil {
		return Options{}, out, err
	}
	opts := Options{Sizes: list, Duration: *duration, AgentdPath: *agentdPath}
	if err := opts.Validate(); err != nil {
		return Options{}, out, err
	}
	if out.GuestRounds < 0 {
		return Options{}, out, fmt.Errorf("--guest-rounds %d: want 0 or more", out.GuestRounds)
	}
	return opts, out, nil
}

// dockerGuestStart measures a Docker guest's start after the rest, on the
// machine the rest left idle; without an engine or the image it says so
// instead.
func dockerGuestStart(ctx context.Context, rounds int, log io.Writer) (*GuestStart, error) {
	if missing := DockerMissing(ctx); missing != "" {
		return &GuestStart{Backend: "docker", Missing: missing}, nil
	}
	b, err := backend.Get("docker")
	if err != nil {
		return nil, err
	}
	return MeasureGuestStart(ctx, b, rounds, log)
}

// GuestStartCommand is `agentctl bench --guest-start` with args:
// MeasureGuestStart alone.
func GuestStartCommand(ctx context.Context, args []string, out, log io.Writer) error {
	fs := flag.NewFlagSet("bench --guest-start", flag.ContinueOnError)
	where := fs.String("backend", "docker", "the backend whose guests are started")
	rounds := fs.Int("rounds", 3, "cold and pooled starts measured, each")
	asJSON := fs.Bool("json", false, "print the figures as JSON")
	backend.RegisterFlags(fs) // a backend's own settings: kubernetes' --namespace, ...
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rounds < 1 || fs.NArg() > 0 {
		return fmt.Errorf("bench --guest-start: want --rounds ≥ 1 and no arguments")
	}
	b, err := backend.Get(*where)
	if err != nil {
		return err
	}
	gs, err := MeasureGuestStart(ctx, b, *rounds, log)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(gs)
	}
	return gs.WriteTable(out)
}
