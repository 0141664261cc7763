package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/runner/eval"
)

func runEval(ctx context.Context, args []string) error {
	fs := flagSet("eval", "usage: agentctl eval SUITE|builtin [flags]   or   agentctl eval --resume DIR [flags]\n\nSUITE is a folder of task files (*.json) or one file; builtin is the built-in suite.")
	scripted := fs.Bool("scripted", false, "drive each trial with the task's scripted solution (respserver; no API key)")
	model := fs.String("model", "", "the real model, through OPENAI_API_KEY (and OPENAI_BASE_URL when set)")
	parallel := fs.Int("parallel", 1, "trials at once, each in its own fresh guest")
	trials := fs.Int("trials", 1, "trials of each task")
	where := fs.String("guest", "local", "where each trial's guest runs: local or docker (a pooled guest when 'agentctl guest pool --apps eval-TASK' runs)")
	out := fs.String("out", "", "the evaluation's new output folder (default eval-<time>)")
	resume := fs.String("resume", "", "go on with the evaluation in this folder: only the trials without a result run")
	tasks := fs.String("tasks", "", "comma-separated task ids to run (default all)")
	agentdPath := fs.String("agentd", "", "agentd binary of local guests (default: next to agentctl, else on $PATH)")
	// The suite may come first, as the usage shows, or after the flags.
	var suiteArg []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		suiteArg, args = args[:1], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	suiteArg = append(suiteArg, fs.Args()...)
	if *agentdPath != "" {
		abs, err := filepath.Abs(*agentdPath)
		if err != nil {
			return err
		}
		*agentdPath = abs
	}
	opts := eval.Options{Guest: *where, AgentdPath: *agentdPath, Scripted: *scripted, Model: *model, Parallel: *parallel,
		Trials: *trials, Out: *out, Progress: os.Stderr}
	if *parallel < 1 || *trials < 1 {
		return errors.New("--parallel and --trials want 1 or more")
	}
	var rep *eval.Report
	var err error
	if *resume != "" {
		if len(suiteArg) != 0 {
			return errors.New("--resume takes no suite: it runs the folder's")
		}
		opts.Out = *resume
		rep, err = eval.Resume(ctx, *resume, opts)
	} else {
		if len(suiteArg) != 1 {
			fs.Usage()
			return errors.New("want one suite")
		}
		if *scripted == (*model != "") {
			return errors.New("want one of --scripted and --model")
		}
		suite, lerr := eval.LoadSuite(suiteArg[0])
		if lerr != nil {
			return lerr
		}
		if *tasks != "" {
			if err := suite.Select(strings.Split(*tasks, ",")); err != nil {
				return err
			}
		}
		if opts.Out == "" {
			opts.Out = "eval-" + time.Now().Format("20060102-150405")
		}
		rep, err = eval.Run(ctx, suite, opts)
	}
	if rep != nil && len(rep.Results) > 0 {
		eval.PrintSummary(os.Stdout, opts.Out, rep)
	}
	return err
}
