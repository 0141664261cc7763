package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// forbiddenOnHost names what only the guest runs: the daemon and its
// executor, input, code worker and Chromium driver (agentd/...), the screen
// pipeline (capture/...), the bench's guest half, and the X11 and input
// libraries they link. A path ending in "/" forbids the package and all
// below it.
var forbiddenOnHost = []string{
	"github.com/agentd-dev/agentd/agentd/",
	"github.com/agentd-dev/agentd/capture/",
	"github.com/agentd-dev/agentd/internal/xkeymap/",
	"github.com/agentd-dev/agentd/tools/bench/guestprobe/",
	"github.com/go-vgo/robotgo/",
	"github.com/jezek/xgb/",
	"github.com/kbinani/screenshot/",
}

// TestAgentctlLinksNoGuestCode: the host program, built for the hosts people
// drive guests from, links none of the guest's own code, so the split of
// docs/design.md ("The tree") holds for the binary and not only for the
// directories. Each forbidden package is reported with the import chain
// that brings it in.
func TestAgentctlLinksNoGuestCode(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to list dependencies: %v", err)
	}
	for _, target := range []string{"darwin/arm64", "linux/amd64"} {
		goos, goarch, _ := strings.Cut(target, "/")
		list := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".")
		list.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		out, err := list.CombinedOutput()
		if err != nil {
			t.Fatalf("go list (%s): %v\n%s", target, err, out)
		}
		imports := map[string][]string{}
		self := ""
		for line := range strings.Lines(string(out)) {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			imports[f[0]] = f[1:]
			self = f[0] // -deps lists the package itself last
		}
		if len(imports) < 100 {
			t.Fatalf("%s: go list named %d packages, too few to be agentctl's:\n%s", target, len(imports), out)
		}
		for p := range imports {
			if forbidden(p) {
				t.Errorf("%s: cmd/agentctl links %s: %s", target, p, strings.Join(importChain(imports, self, p), " → "))
			}
		}
	}
}

func forbidden(p string) bool {
	for _, f := range forbiddenOnHost {
		if p == strings.TrimSuffix(f, "/") || strings.HasPrefix(p, f) {
			return true
		}
	}
	return false
}

// importChain returns a shortest chain of imports from root to p.
func importChain(imports map[string][]string, root, p string) []string {
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		if q == p {
			var chain []string
			for ; q != ""; q = from[q] {
				chain = append([]string{strings.TrimPrefix(q, "github.com/agentd-dev/agentd/")}, chain...)
			}
			return chain
		}
		for _, next := range imports[q] {
			if _, seen := from[next]; !seen {
				from[next] = q
				queue = append(queue, next)
			}
		}
	}
	return []string{"(no chain found)", p}
}
