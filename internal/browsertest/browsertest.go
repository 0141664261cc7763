// Package browsertest starts what tests of the browser toolset run
// against: the real agentd --browser (Chromium on a private Xvfb) dialled
// through the guest client, and the exercise's pickup form server.
package browsertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
	"github.com/agentd-dev/agentd/tools/exercise/form"
)

const token = "browser-test-token-0123456789abcdef"

// StartGuest runs agentd --browser on a private 1440×900 Xvfb and returns a
// connected client. As root, Chromium runs as nobody (it refuses root with
// its sandbox on). Everything stops when the test ends.
func StartGuest(t *testing.T) *guest.Client {
	t.Helper()
	prereq.Programs(t, prereq.X, "chromium")
	bin := agentdtest.Binary(t)
	x := xvfbtest.Start(t, 1440, 900)
	dir := t.TempDir()
	tokenFile, addrFile := filepath.Join(dir, "token"), filepath.Join(dir, "addr")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--display", x.Display, "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--addr-file", addrFile, "--browser"}
	if os.Geteuid() == 0 {
		args = append(args, "--browser-user", "nobody")
	}
	addr, _ := agentdtest.Start(t, exec.Command(bin, args...), addrFile, time.Minute)
	return agentdtest.Dial(t, addr, token)
}

// FormServer serves the pickup form on loopback; its records go to a
// temporary file.
func FormServer(t *testing.T) *form.RecordServer {
	t.Helper()
	srv, err := form.NewRecordServer(filepath.Join(t.TempDir(), "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// Origin is a form server's origin (its URL without the trailing slash).
func Origin(srv *form.RecordServer) string { return strings.TrimSuffix(srv.URL(), "/") }

// ChromiumProfiles returns the profile directories (--user-data-dir) of the
// Chromium processes this test process started, through the agentd it
// runs: a test looks there for what the browser saved.
func ChromiumProfiles(t *testing.T) []string {
	t.Helper()
	self := strconv.Itoa(os.Getpid())
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil || !Descends(d.Name(), self) {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(cmdline), "\x00") {
			if dir, ok := strings.CutPrefix(a, "--user-data-dir="); ok && !seen[dir] {
				seen[dir] = true
				out = append(out, dir)
			}
		}
	}
	return out
}

// Descends reports whether process pid descends from ancestor, walking
// up to 32 parents through /proc.
func Descends(pid, ancestor string) bool {
	for range 32 {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return false
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			return false
		}
		pid = fields[1]
		if pid == ancestor {
			return true
		}
		if pid == "0" || pid == "1" {
			return false
		}
	}
	return false
}
