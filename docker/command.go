package docker

import (
	"context"
	"fmt"
	"path"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/agentd-dev/agentd/internal/limitbuf"
)

// MaxCommandOutput bounds what Command returns of a command's output.
const MaxCommandOutput = 1 << 20

// Command runs argv in the running guest as its desktop user, in the
// user's home, with the desktop's display (the image's DISPLAY and the
// entrypoint's cookie file): for checkers that read the desktop's state
// (runner/eval). It returns the command's standard output (its error
// output is dropped) and exit code; err is for a command that could not
// run.
func (g *Guest) Command(ctx context.Context, argv []string) ([]byte, int, error) {
	ex, err := g.cli.ExecCreate(ctx, g.ID, client.ExecCreateOptions{
		User:         g.user,
		WorkingDir:   g.Home,
		Env:          []string{"XAUTHORITY=" + path.Join(g.Home, ".Xauthority")},
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          argv,
	})
	if err != nil {
		return nil, -1, fmt.Errorf("docker guest %s: command: %w", g.Name, err)
	}
	att, err := g.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, -1, fmt.Errorf("docker guest %s: command: %w", g.Name, err)
	}
	stop := context.AfterFunc(ctx, att.Close)
	defer stop()
	defer att.Close()
	out := &limitbuf.Buffer{Max: MaxCommandOutput}
	errOut := &limitbuf.Buffer{Max: MaxCommandOutput}
	if _, err := stdcopy.StdCopy(out, errOut, att.Reader); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, -1, fmt.Errorf("docker guest %s: command: %w", g.Name, err)
	}
	res, err := g.cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	if err != nil {
		return nil, -1, fmt.Errorf("docker guest %s: command: %w", g.Name, err)
	}
	return out.Bytes(), res.ExitCode, nil
}

// Command runs argv in the guest (Guest.Command).
func (i *instance) Command(ctx context.Context, argv []string) ([]byte, int, error) {
	return i.g.Command(ctx, argv)
}
