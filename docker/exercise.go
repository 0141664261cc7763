package docker

import (
	"context"
	"path"

	"github.com/agentd-dev/agentd/exercise"
)

// Exercise runs the exercise desktop (SPEC §5) in a fresh container for
// exercise.Run; the guest's Down removes it. build, if not nil, builds a
// missing image.
func Exercise(build *BuildOptions) exercise.StartRemote {
	return func(ctx context.Context, spec exercise.RemoteSpec, progress func(string)) (*exercise.RemoteGuest, error) {
		g, err := Up(ctx, Config{
			Size:      spec.Size,
			Apps:      spec.Apps,
			URL:       spec.URL,
			File:      spec.File,
			ConfigDir: spec.ConfigDir,
			Build:     build,
		}, progress)
		if err != nil {
			return nil, err
		}
		return g.Remote(), nil
	}
}

// Remote is the guest as the exercise uses it: files are read relative to
// the user's home.
func (g *Guest) Remote() *exercise.RemoteGuest {
	return &exercise.RemoteGuest{
		Describe:  "docker container " + g.Name,
		Addr:      g.Addr,
		TokenFile: g.TokenFile,
		ReadFile: func(ctx context.Context, rel string) ([]byte, error) {
			return g.ReadFile(ctx, path.Join(g.Home, rel))
		},
		Down: g.Down,
	}
}
