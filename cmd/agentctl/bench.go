package main

import (
	"context"
	"os"

	"github.com/agentd-dev/agentd/tools/bench"
)

func runBench(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "--guest-start" {
		return bench.GuestStartCommand(ctx, args[1:], os.Stdout, os.Stderr)
	}
	return bench.Command(ctx, args, os.Stdout, os.Stderr)
}
