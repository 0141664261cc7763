package session

import (
	"flag"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/runner"
)

// TestConfigFlagsAndCheck: the flags' defaults make a valid computer run
// once a task is given, --allow-origin repeats, and each setting a run
// cannot go with is refused naming its flag.
func TestConfigFlagsAndCheck(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var c Config
	c.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if c.Mode != Computer || c.MaxSteps != runner.DefaultMaxSteps || c.View != "1280x800" || c.AllowOrigins != nil {
		t.Fatalf("defaults %+v", c)
	}
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), "the task is required") {
		t.Fatalf("no task: %v", err)
	}
	c.Task = "a task"
	if err := c.Check(); err != nil {
		t.Fatalf("the defaults with a task: %v", err)
	}
	var browser Config
	fs = flag.NewFlagSet("run", flag.ContinueOnError)
	browser.RegisterFlags(fs)
	if err := fs.Parse([]string{"--mode", "browser", "--allow-origin", "https://a.example", "--allow-origin", "https://b.example"}); err != nil {
		t.Fatal(err)
	}
	browser.Task = "a task"
	if got := strings.Join(browser.AllowOrigins, " "); got != "https://a.example https://b.example" {
		t.Fatalf("--allow-origin twice: %q", got)
	}
	if err := browser.Check(); err != nil {
		t.Fatalf("browser mode with origins: %v", err)
	}
	base := Config{Task: "a task", Mode: Computer, MaxSteps: 1}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.ContextImages = -1 }, "--context-images is -1"},
		{func(c *Config) { c.ContextBytes = -5 }, "--context-bytes is -5"},
		{func(c *Config) { c.MaxSteps = 0 }, "--max-steps is 0"},
		{func(c *Config) { c.Mode = "shell" }, `--mode "shell"`},
		{func(c *Config) { c.Eager = true }, "--eager needs --stream"},
		{func(c *Config) { c.AllowOrigins = []string{"https://a.example"} }, "--allow-origin is for --mode browser"},
		{func(c *Config) { c.Mode, c.Confirm = Code, true }, "--confirm is for --mode computer"},
	} {
		bad := base
		tc.change(&bad)
		if err := bad.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", bad, err, tc.want)
		}
	}
}
