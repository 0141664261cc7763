package docker

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/tools/exercise"
	"github.com/moby/moby/client"
)

// TestBrowserSeccomp: the browser's profile is Docker's default with
// clone, unshare and chroot allowed whatever the arguments, and nothing
// else changed.
func TestBrowserSeccomp(t *testing.T) {
	raw, err := BrowserSeccomp()
	if err != nil {
		t.Fatal(err)
	}
	var base, got struct {
		DefaultAction string            `json:"defaultAction"`
		Syscalls      []json.RawMessage `json:"syscalls"`
	}
	if err := json.Unmarshal(mobyDefault, &base); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.DefaultAction != "SCMP_ACT_ERRNO" || got.DefaultAction != base.DefaultAction {
		t.Errorf("defaultAction %q: want Docker's SCMP_ACT_ERRNO", got.DefaultAction)
	}
	if len(got.Syscalls) != len(base.Syscalls)+1 {
		t.Fatalf("%d rules: want Docker's %d and one more", len(got.Syscalls), len(base.Syscalls))
	}
	var added struct {
		Names    []string `json:"names"`
		Action   string   `json:"action"`
		Args     []any    `json:"args"`
		Includes any      `json:"includes"`
	}
	if err := json.Unmarshal(got.Syscalls[len(base.Syscalls)], &added); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(added.Names, []string{"clone", "unshare", "chroot"}) || added.Action != "SCMP_ACT_ALLOW" || added.Args != nil || added.Includes != nil {
		t.Errorf("added rule %+v: want clone, unshare and chroot allowed unconditionally", added)
	}
	for _, name := range []string{"setns", "mount", "pivot_root", "bpf"} {
		if strings.Contains(string(got.Syscalls[len(base.Syscalls)]), `"`+name+`"`) {
			t.Errorf("the added rule allows %s", name)
		}
	}
}

// TestBrowserOptions: only a guest with the browser gets AGENTD_BROWSER=1
// and the browser's profile; both keep no-new-privileges and drop every
// capability.
func TestBrowserOptions(t *testing.T) {
	profile, err := BrowserSeccomp()
	if err != nil {
		t.Fatal(err)
	}
	for _, browser := range []bool{false, true} {
		opts, err := createOptions(Config{Browser: browser, Size: "1280x800"}, "sha256:x", ids{1000, 1000}, "/home/agent", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		hc := opts.HostConfig
		want := []string{"no-new-privileges:true"}
		if browser {
			want = append(want, "seccomp="+string(profile))
		}
		if !slices.Equal(hc.SecurityOpt, want) || !slices.Equal(hc.CapDrop, []string{"ALL"}) || len(hc.CapAdd) > 0 {
			t.Errorf("browser %v: SecurityOpt has %d entries, CapDrop %v, CapAdd %v: want %d entries, ALL dropped",
				browser, len(hc.SecurityOpt), hc.CapDrop, hc.CapAdd, len(want))
		}
		if got := slices.Contains(opts.Config.Env, "AGENTD_BROWSER=1"); got != browser {
			t.Errorf("browser %v: AGENTD_BROWSER=1 in the environment: %v", browser, got)
		}
	}
}

// TestBrowserSandboxed: with Config.Browser the container keeps every
// hardening setting (no capabilities, no-new-privileges) and adds only the
// browser's seccomp profile; agentd's Chromium starts with its sandbox:
// each renderer in a user and PID namespace of its own, under its own
// seccomp filter.
func TestBrowserSandboxed(t *testing.T) {
	cli := needImage(t)
	g := upGuest(t, Config{Size: "1280x800", Browser: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ins, err := cli.ContainerInspect(ctx, g.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc := ins.Container.HostConfig
	if !slices.Equal(hc.CapDrop, []string{"ALL"}) || len(hc.CapAdd) > 0 {
		t.Errorf("CapDrop %v, CapAdd %v: want every capability dropped, none added", hc.CapDrop, hc.CapAdd)
	}
	var seccomp int
	for _, o := range hc.SecurityOpt {
		if strings.HasPrefix(o, "seccomp=") {
			seccomp++
		}
	}
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges:true") || seccomp != 1 || len(hc.SecurityOpt) != 2 {
		t.Errorf("SecurityOpt has %d entries: want no-new-privileges and one seccomp profile", len(hc.SecurityOpt))
	}

	// One line per process: its namespaces, seccomp filters and command.
	const probe = `for p in /proc/[0-9]*; do
		c="$(tr '\0' ' ' <$p/cmdline 2>/dev/null)" || continue
		case "$c" in *chromium*) ;; *) continue;; esac
		echo "$(readlink $p/ns/user) $(readlink $p/ns/pid) $(awk '/^Seccomp_filters:/{print $2}' $p/status) $c"
	done`
	own := strings.Fields(execOutput(t, cli, g, "bash", "-c", "readlink /proc/self/ns/user /proc/self/ns/pid"))
	if len(own) != 2 {
		t.Fatalf("the container's namespaces: %q", own)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		out := execOutput(t, cli, g, "bash", "-c", probe)
		renderers, sandboxed := 0, 0
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 4 || !strings.Contains(line, "--type=renderer") {
				continue
			}
			renderers++
			if f[0] != own[0] && f[1] != own[1] && f[2] != "0" {
				sandboxed++
			}
		}
		if renderers > 0 && renderers == sandboxed {
			t.Logf("%d renderers, each in its own user and PID namespace with a seccomp filter:\n%s", renderers, out)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s: %d renderers, %d sandboxed (user namespace %s, PID namespace %s in the container):\n%s\nagentd's log:\n%s",
				renderers, sandboxed, own[0], own[1], out, guestLogs(g))
		}
		time.Sleep(time.Second)
	}
}

func guestLogs(g *Guest) string {
	logs, err := g.Logs(context.Background(), 40)
	if err != nil {
		return err.Error()
	}
	return logs
}

// TestBrowserExerciseRunsInContainer is 'agentctl exercise --mode browser
// --guest docker': the scripted model reads the form page through the
// container's Chromium (read_page refs), fills it with type,
// select_option and click, and the record read back out of the container
// is exactly what it typed.
func TestBrowserExerciseRunsInContainer(t *testing.T) {
	rep, _ := runExercise(t, exercise.RunConfig{Browser: true})
	if !rep.Browser || rep.Steps == 0 {
		t.Errorf("report %+v: want a browser run with steps", rep)
	}
}
