package bench

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// tool is a program that a peer stack shells out to, and the Debian package
// that has it.
type tool struct{ name, pkg string }

var (
	scrotTool   = tool{"scrot", "scrot"}
	importTool  = tool{"import", "imagemagick"}
	xdotoolTool = tool{"xdotool", "xdotool"}
)

// find returns the tool's path, or why the peer cannot be measured.
func (t tool) find() (path, missing string) {
	p, err := exec.LookPath(t.name)
	if err != nil {
		return "", fmt.Sprintf("missing (apt-get install %s)", t.pkg)
	}
	return p, ""
}

// shell runs peers' commands against the guest's display.
type shell struct {
	env []string
	dir string
}

func (s shell) run(ctx context.Context, path string, args ...string) error {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = s.env
	cmd.Dir = s.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", path, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
