package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/agentd-dev/agentd/docker"
	"github.com/agentd-dev/agentd/exercise"
)

func init() {
	register("exercise", "run the no-API-key exercise: a scripted model books a pickup and saves a note", runExercise)
}

func runExercise(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("exercise", flag.ContinueOnError)
	backend := fs.String("guest", "local", "where the exercise desktop runs: local or docker (a fresh container, removed afterwards)")
	recordDir := fs.String("record-dir", "runs", "parent folder of the run record")
	agentdPath := fs.String("agentd", "", "agentd binary (default: next to agentctl, else on $PATH)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	cfg := exercise.RunConfig{Out: os.Stdout, RecordDir: *recordDir, AgentdPath: *agentdPath}
	switch *backend {
	case "local":
		if runtime.GOOS != "linux" {
			return errors.New("the local guest runs on Linux only: use --guest docker")
		}
	case "docker":
		cfg.Remote = docker.Exercise(dockerBuild())
	case "vm":
		return errors.New("guest backend \"vm\" is not available yet: use --guest local or docker")
	default:
		return fmt.Errorf("unknown guest backend %q: use local or docker", *backend)
	}
	rep, err := exercise.Run(ctx, cfg)
	if err != nil {
		if rep != nil && rep.RecordDir != "" {
			fmt.Fprintf(os.Stderr, "run record: %s\n", rep.RecordDir)
		}
		return err
	}
	rep.Print(os.Stdout)
	return nil
}
