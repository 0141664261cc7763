package vm

import (
	"context"
	"path"

	"github.com/agentd-dev/agentd/exercise"
)

// Exercise runs the exercise desktop (SPEC §5) in a fresh VM for
// exercise.Run; the guest's Down deletes it. base sets everything the
// exercise does not (Repo, Limactl, StartTimeout, ...).
func Exercise(base Config) exercise.StartRemote {
	return func(ctx context.Context, spec exercise.RemoteSpec, progress func(string)) (*exercise.RemoteGuest, error) {
		cfg := base
		cfg.Size, cfg.Apps, cfg.URL, cfg.File, cfg.ConfigDir = spec.Size, spec.Apps, spec.URL, spec.File, spec.ConfigDir
		g, err := Up(ctx, cfg, progress)
		if err != nil {
			return nil, err
		}
		return g.Remote(), nil
	}
}

// Remote is the guest as the exercise uses it: files are read relative to
// the desktop user's home.
func (g *Guest) Remote() *exercise.RemoteGuest {
	return &exercise.RemoteGuest{
		Describe:  "Lima VM " + g.Name,
		Addr:      g.Addr,
		TokenFile: g.TokenFile,
		ReadFile: func(ctx context.Context, rel string) ([]byte, error) {
			return g.ReadFile(ctx, path.Join(g.Home, rel))
		},
		Down: g.Down,
	}
}
