package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/tools/exercise"
	exdesktop "github.com/agentd-dev/agentd/tools/exercise/desktop"
)

func runExercise(ctx context.Context, args []string) error {
	fs := flagSet("exercise", "")
	where := fs.String("guest", "local", "where the exercise desktop runs: local, docker (a fresh container, or one from 'agentctl guest pool --apps exercise') or vm (a fresh Lima VM); removed afterwards")
	recordDir := fs.String("record-dir", "runs", "parent folder of the run record")
	agentdPath := fs.String("agentd", "", "agentd binary (default: next to agentctl, else on $PATH)")
	mode := fs.String("mode", "computer", "computer: the scripted model uses the computer tool; code: it writes Python (exec_py); browser: it fills the form through the browser toolset on agentd's Chromium (local or docker guest)")
	live := fs.Bool("live", false, "a real model instead of the scripted one, through OPENAI_API_KEY (and OPENAI_BASE_URL when set); computer mode; verified the same way")
	model := fs.String("model", exercise.DefaultLiveModel, "with --live: the model")
	backend.RegisterFlags(fs) // a backend's own settings: kubernetes' --namespace, ...
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *mode != "computer" && *mode != "code" && *mode != "browser" {
		return fmt.Errorf("--mode %q: use computer, code or browser", *mode)
	}
	modelSet := false
	fs.Visit(func(f *flag.Flag) { modelSet = modelSet || f.Name == "model" })
	switch {
	case modelSet && !*live:
		return errors.New("--model is for --live")
	case *live && *mode != "computer":
		return errors.New("--live is for --mode computer so far")
	case *live && os.Getenv("OPENAI_API_KEY") == "":
		return exercise.ErrNoAPIKey
	}
	b, err := backend.Get(*where)
	if err != nil {
		return err
	}
	if err := b.Check(backend.Spec{Desktop: exdesktop.Apps, Code: *mode == "code"}); err != nil {
		return err
	}
	cfg := exercise.RunConfig{Out: os.Stdout, RecordDir: *recordDir, Backend: b.Name(), AgentdPath: *agentdPath, Code: *mode == "code",
		Browser: *mode == "browser", Live: *live, Model: *model}
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
