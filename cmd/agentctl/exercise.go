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
	"github.com/agentd-dev/agentd/vm"
)

func init() {
	register("exercise", "run the no-API-key exercise: a scripted model books a pickup and saves a note", runExercise)
}

func runExercise(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("exercise", flag.ContinueOnError)
	backend := fs.String("guest", "local", "where the exercise desktop runs: local, docker (a fresh container) or vm (a fresh Lima VM); removed afterwards")
	recordDir := fs.String("record-dir", "runs", "parent folder of the run record")
	agentdPath := fs.String("agentd", "", "agentd binary (default: next to agentctl, else on $PATH)")
	mode := fs.String("mode", "computer", "computer: the scripted model uses the computer tool; code: it writes Python (exec_py, local guest)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *mode != "computer" && *mode != "code" {
		return fmt.Errorf("--mode %q: use computer or code", *mode)
	}
	cfg := exercise.RunConfig{Out: os.Stdout, RecordDir: *recordDir, AgentdPath: *agentdPath, Code: *mode == "code"}
	switch *backend {
	case "local":
		if runtime.GOOS != "linux" {
			return errors.New("the local guest runs on Linux only: use --guest docker")
		}
	case "docker":
		cfg.Remote = docker.Exercise(dockerBuild())
	case "vm":
		cfg.Remote = vm.Exercise(vm.Config{})
	default:
		return fmt.Errorf("unknown guest backend %q: use local, docker or vm", *backend)
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
