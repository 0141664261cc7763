// Package dockertest gives tests outside the docker package the engine
// their guests run on, or skips them through prereq.Docker (a failure
// where AGENTD_REQUIRE_DOCKER is set).
package dockertest

import (
	"context"
	"testing"

	"github.com/moby/moby/client"

	"github.com/agentd-dev/agentd/docker"
	"github.com/agentd-dev/agentd/internal/prereq"
)

// Engine returns a client of the Docker engine, closed when the test ends.
// With image set, the engine must hold that image as well: the tests do
// not build it (make docker-image does).
func Engine(tb testing.TB, ctx context.Context, image string) *client.Client {
	tb.Helper()
	cli, err := docker.NewClient(ctx)
	if err != nil {
		prereq.Missing(tb, prereq.Docker, "requires a Docker engine: %v", err)
	}
	tb.Cleanup(func() { cli.Close() })
	if image == "" {
		return cli
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		prereq.Missing(tb, prereq.Docker, "requires the %s image (make docker-image): %v", image, err)
	}
	return cli
}
