package computer

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/internal/prereq"
)

// hostPackages are what a host program links to run the computer tool: the
// runner, this contract, the action schema, and agentd's client.
var hostPackages = []string{
	"github.com/agentd-dev/agentd/runner",
	"github.com/agentd-dev/agentd/runner/computer",
	"github.com/agentd-dev/agentd/actions",
	"github.com/agentd-dev/agentd/guest",
	"github.com/agentd-dev/agentd/actions/wire",
}

// TestHostPackagesNeedNoCgo: importing the runner pulls in no cgo and no
// X11, even where cgo is enabled (a Linux host with a C compiler): no
// package outside the standard library among their dependencies has cgo
// files, and they build with CGO_ENABLED=0.
func TestHostPackagesNeedNoCgo(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		prereq.Missing(t, prereq.Host, "the go command on PATH, to list dependencies: %v", err)
	}
	list := exec.Command(goBin, append([]string{"list", "-deps", "-f",
		"{{if not .Standard}}{{.ImportPath}} {{len .CgoFiles}}{{end}}"}, hostPackages...)...)
	list.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, n, _ := strings.Cut(line, " ")
		deps++
		if n != "0" {
			t.Errorf("%s has %s cgo files: a host program importing the runner would need cgo", path, n)
		}
		if strings.Contains(path, "robotgo") || strings.Contains(path, "/input/xtest") {
			t.Errorf("%s is among the host packages' dependencies", path)
		}
	}
	if deps < len(hostPackages) {
		t.Fatalf("go list named %d packages, want at least %d:\n%s", deps, len(hostPackages), out)
	}
	build := exec.Command(goBin, append([]string{"build"}, hostPackages...)...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
}
