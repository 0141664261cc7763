package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/tools/bench"
)

// benchGuestStart is 'agentctl bench --guest-start': bench.MeasureGuestStart
// alone.
func benchGuestStart(ctx context.Context, args []string) error {
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
	gs, err := bench.MeasureGuestStart(ctx, b, *rounds, os.Stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(gs)
	}
	return gs.WriteTable(os.Stdout)
}
