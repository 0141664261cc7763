package runner_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A program that imports only the runner and a function tool links
// neither agentd's protocol (actions/wire) nor its client (guest), nor
// the code tool: the runner privileges no tool of agentd's.
func TestFunctionOnlyProgramLinksNoGuest(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./testdata/functiononly").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !strings.Contains(string(out), "github.com/agentd-dev/agentd/runner\n") {
		t.Fatalf("go list named %d packages, not the program's:\n%s", len(deps), out)
	}
	const mod = "github.com/agentd-dev/agentd/"
	for _, d := range deps {
		for _, banned := range []string{"actions/wire", "guest", "runner/codetool", "runner/browser", "agentd", "capture"} {
			if d == mod+banned || strings.HasPrefix(d, mod+banned+"/") {
				t.Errorf("the program links %s", d)
			}
		}
	}
}
