package main

import (
	"flag"
	"fmt"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/runner"
)

// budgetFlags are run's context budget: --context-images and
// --context-bytes (runner.ContextBudget). Either makes the run keep its own
// history (store false).
type budgetFlags struct {
	images, bytes int
	given         bool
}

func (b *budgetFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&b.images, "context-images", 0, "keep at most N images in each request (the current screenshot always; older ones become placeholders); the run keeps its own history (store false)")
	fs.IntVar(&b.bytes, "context-bytes", 0, "keep each request's input within B bytes (older images dropped first); the run keeps its own history (store false)")
}

// check refuses a negative limit, after parsing.
func (b *budgetFlags) check(fs *flag.FlagSet) error {
	fs.Visit(func(f *flag.Flag) { b.given = b.given || f.Name == "context-images" || f.Name == "context-bytes" })
	switch {
	case b.images < 0:
		return fmt.Errorf("--context-images is %d; it must be at least 1 (0: no limit on images)", b.images)
	case b.bytes < 0:
		return fmt.Errorf("--context-bytes is %d; it must be at least 1 (0: no limit on bytes)", b.bytes)
	}
	return nil
}

// resumed takes the recorded budget of a run being resumed, unless the
// flags give another (a larger one, for a run that outgrew its budget).
func (b *budgetFlags) resumed(start startNote) {
	if !b.given {
		b.images, b.bytes = start.ContextImages, start.ContextBytes
	}
}

// apply sets opts for the budget, if there is one.
func (b *budgetFlags) apply(opts *runner.RunOptions) {
	if b.images == 0 && b.bytes == 0 {
		return
	}
	opts.Store = openai.Bool(false)
	opts.ContextBudget = &runner.ContextBudget{MaxImages: b.images, MaxInputBytes: b.bytes}
}
