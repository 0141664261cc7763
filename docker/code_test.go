package docker

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/tools/exercise"
)

// TestCodeExerciseRunsInContainer is 'agentctl exercise --guest docker
// --mode code': the scripted model's three exec_py calls, the later ones
// using the first one's helper and variables, run in a container (no
// network, non-root) and leave the record and note the native exercise
// leaves, read back out of the container and checked the same way.
func TestCodeExerciseRunsInContainer(t *testing.T) {
	rep, out := runExercise(t, exercise.RunConfig{Code: true})
	if rep.Steps != 4 || rep.Actions != 3 || rep.BeforeAction != 3 {
		t.Errorf("steps %d, code calls %d, approvals %d; want 4, 3, 3", rep.Steps, rep.Actions, rep.BeforeAction)
	}
	if !strings.Contains(out, "guest up: docker container agentd-guest-") {
		t.Errorf("the output does not say the guest is a container")
	}
}

// TestCodeOnlyWithOption: a container started with Config.Code runs Python
// as the container's non-root user with no network; one started without
// refuses exec.
func TestCodeOnlyWithOption(t *testing.T) {
	needImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	g := upGuest(t, Config{Size: "1280x800", Code: true})
	c := agentdtest.Dial(t, g.Addr, token(t, g))
	res, err := c.Exec(ctx, `import os, socket
log("uid=%d" % os.getuid())
log("interfaces=" + ",".join(sorted(os.listdir("/sys/class/net"))))
try:
    socket.create_connection(("192.0.2.1", 80), timeout=5)
    log("network=connected")
except OSError as e:
    log("network=" + type(e).__name__)
log("size=%dx%d" % tuple(pyautogui.size()))
`, 0)
	if err != nil || res.Traceback != "" {
		t.Fatalf("exec: %v\n%s%s", err, res.Output, res.Traceback)
	}
	t.Logf("exec output:\n%s", res.Output)
	uid, _, _ := strings.Cut(g.user, ":")
	for _, want := range []string{"uid=" + uid + "\n", "interfaces=lo\n", "size=1280x800\n"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, res.Output)
		}
	}
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("the container's user %q is not a non-root uid", g.user)
	}
	if !strings.Contains(res.Output, "network=") || strings.Contains(res.Output, "network=connected") {
		t.Errorf("the code reached an address outside the container, or did not try:\n%s", res.Output)
	}

	plain := upGuest(t, Config{Size: "1280x800"})
	pc := agentdtest.Dial(t, plain.Addr, token(t, plain))
	_, err = pc.Exec(ctx, `log("ran")`, 0)
	var ge *guest.Error
	if !errors.As(err, &ge) || ge.Code != wire.CodeUnavailable {
		t.Fatalf("exec without Code: %v, want agentd's %q error", err, wire.CodeUnavailable)
	}
}
