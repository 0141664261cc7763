package docker

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/moby/client"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/guest/backend/backendtest"
)

// TestConformance runs the guest backends' suite on real containers.
func TestConformance(t *testing.T) {
	var cli *client.Client
	backendtest.Run(t, backendtest.Factory{
		New: func(t *testing.T) (backend.Backend, backend.Spec) {
			cli = needImage(t)
			return Backend{}, backend.Spec{Width: 800, Height: 600}
		},
		// The entrypoint writes the X cookie into the home at every start.
		ReadBack:   ".Xauthority",
		AnyContent: true,
		Left: func(d backend.Description) []string {
			var left []string
			if _, err := cli.ContainerInspect(context.Background(), d.Instance, client.ContainerInspectOptions{}); !isNotFound(err) {
				left = append(left, "container "+d.Instance)
			}
			if dir := filepath.Dir(d.TokenFile); dir != "." {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					left = append(left, dir)
				}
			}
			return left
		},
		// As a person would: docker rm -f.
		Vanish: func(t *testing.T, d backend.Description) {
			if _, err := cli.ContainerRemove(context.Background(), d.Instance, client.ContainerRemoveOptions{Force: true}); err != nil {
				t.Fatalf("remove the container from outside: %v", err)
			}
		},
	})
}
