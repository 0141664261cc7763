package session

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/agentd-dev/agentd/runner"
)

// Origins is a repeatable --allow-origin flag.
type Origins []string

func (o *Origins) String() string { return strings.Join(*o, ",") }

// Set adds an origin.
func (o *Origins) Set(v string) error {
	*o = append(*o, v)
	return nil
}

// RegisterFlags adds c's settings to fs as 'agentctl run' gives them, its
// defaults the flags' (a resume names the flags given; Continue).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Model, "model", "gpt-5.4", "model to run the computer tool with")
	fs.IntVar(&c.MaxSteps, "max-steps", runner.DefaultMaxSteps, "most API requests the run may send")
	fs.StringVar(&c.View, "view", "1280x800", "the model sees the screen fitted within WxH (aspect kept); coordinates are mapped back")
	fs.BoolVar(&c.Confirm, "confirm", false, "ask before each action and each final screenshot (before_action): on the terminal and, with --console, in the page; the first answer wins")
	fs.StringVar(&c.Mode, "mode", Computer, "computer: the computer tool; code: the model writes Python (pyautogui) run in the guest (agentd --code); browser: the browser toolset on the guest's Chromium (agentd --browser)")
	fs.BoolVar(&c.Stream, "stream", false, "read each response as a stream and print the model's text as it arrives")
	fs.BoolVar(&c.Eager, "eager", false, "with --stream: run each completed call while the response is still arriving (effects cannot be undone if the model's response then changes)")
	fs.IntVar(&c.ContextImages, "context-images", 0, "keep at most N images in each request (the current screenshot always; older ones become placeholders); the run keeps its own history (store false)")
	fs.IntVar(&c.ContextBytes, "context-bytes", 0, "keep each request's input within B bytes (older images dropped first); the run keeps its own history (store false)")
	fs.Var((*Origins)(&c.AllowOrigins), "allow-origin", "with --mode browser: an origin the model may navigate to (scheme://host[:port]); repeat for more")
}

// Check refuses settings a run cannot go with, naming the flag to change.
func (c Config) Check() error {
	switch {
	case c.ContextImages < 0:
		return fmt.Errorf("--context-images is %d; it must be at least 1 (0: no limit on images)", c.ContextImages)
	case c.ContextBytes < 0:
		return fmt.Errorf("--context-bytes is %d; it must be at least 1 (0: no limit on bytes)", c.ContextBytes)
	case c.Task == "":
		return errors.New(`the task is required: agentctl run --guest ADDR "task"`)
	case c.MaxSteps < 1:
		return fmt.Errorf("--max-steps is %d; it must be at least 1", c.MaxSteps)
	case c.Mode != Computer && c.Mode != Code && c.Mode != Browser:
		return fmt.Errorf("--mode %q: use computer, code or browser", c.Mode)
	case c.Eager && !c.Stream:
		return errors.New("--eager needs --stream: calls can only start early while a response streams")
	case len(c.AllowOrigins) > 0 && c.Mode != Browser:
		return errors.New("--allow-origin is for --mode browser")
	case c.Confirm && c.Mode != Computer:
		return errors.New("--confirm is for --mode computer (the browser mode asks before each navigation anyway)")
	}
	return nil
}
