package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/agentd-dev/agentd/exercise"
)

func init() {
	register("exercise", "run the no-API-key exercise: a scripted model books a pickup and saves a note", runExercise)
}

func runExercise(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("exercise", flag.ContinueOnError)
	backend := fs.String("guest", "local", "guest backend: local")
	recordDir := fs.String("record-dir", "runs", "parent folder of the run record")
	agentdPath := fs.String("agentd", "", "agentd binary (default: next to agentctl, else on $PATH)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	switch *backend {
	case "local":
		if runtime.GOOS != "linux" {
			return errors.New("the local guest runs on Linux only")
		}
	default:
		return fmt.Errorf("guest backend %q is not available yet: use --guest local", *backend)
	}
	rep, err := exercise.Run(ctx, exercise.RunConfig{Out: os.Stdout, RecordDir: *recordDir, AgentdPath: *agentdPath})
	if err != nil {
		if rep != nil && rep.RecordDir != "" {
			fmt.Fprintf(os.Stderr, "run record: %s\n", rep.RecordDir)
		}
		return err
	}
	rep.Print(os.Stdout)
	return nil
}
