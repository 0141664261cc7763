package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestAgentdLinksNoModelAPI: the guest daemon links no openai-go (the
// browser driver contract it serves, actions/browser, has no model API),
// for the guests' architectures.
func TestAgentdLinksNoModelAPI(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to list dependencies: %v", err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		list := exec.Command(goBin, "list", "-deps", ".")
		list.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=1")
		out, err := list.CombinedOutput()
		if err != nil {
			t.Fatalf("go list (linux/%s): %v\n%s", arch, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 100 {
			t.Fatalf("linux/%s: go list named %d packages, too few to be agentd's:\n%s", arch, len(deps), out)
		}
		for _, p := range deps {
			if strings.HasPrefix(p, "github.com/openai/openai-go") {
				t.Errorf("linux/%s: cmd/agentd links %s", arch, p)
			}
		}
	}
}
