package vm

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/internal/prereq"
)

func TestConfigDefaults(t *testing.T) {
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	wantType := map[string]string{"darwin": "vz"}[runtime.GOOS]
	if wantType == "" {
		wantType = "qemu"
	}
	if cfg.VMType != wantType || cfg.Arch != hostArch() || cfg.Size != DefaultSize || cfg.StartTimeout != DefaultStartTimeout {
		t.Errorf("defaults: %+v", cfg)
	}
	if !strings.HasPrefix(cfg.Name, "agentd-") || !nameRE.MatchString(cfg.Name) {
		t.Errorf("default name %q", cfg.Name)
	}
	if want := filepath.Join(".", "bin", "agentd-linux-"+runtime.GOARCH); cfg.Agentd != want {
		t.Errorf("default agentd %q, want %q", cfg.Agentd, want)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Name: "-x"}, `name "-x"`},
		{Config{Name: strings.Repeat("a", 33)}, "up to 32"},
		{Config{Size: "1440x900x8"}, `size "1440x900x8": want WxH`},
		{Config{Size: "10x10"}, "out of range"},
		{Config{Apps: []string{"firefox;reboot"}}, `application "firefox;reboot"`},
		{Config{Env: []string{"GUEST_FILE=x"}}, "GUEST_FILE is set by the guest's configuration"},
		{Config{Env: []string{"DISPLAY=:0"}}, "DISPLAY is set by the guest's configuration"},
		{Config{Env: []string{"lower=1"}}, "want KEY=VALUE"},
		{Config{Arch: "riscv64"}, `arch "riscv64"`},
		{Config{VMType: "wsl2"}, `vmType "wsl2"`},
		{Config{Memory: "4G"}, "sizes like 4GiB"},
	} {
		if _, err := tc.cfg.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestCheckVZ(t *testing.T) {
	version := func(v string) func() (string, error) { return func() (string, error) { return v + "\n", nil } }
	for _, tc := range []struct {
		vmType, goos, version, want string
	}{
		{"vz", "darwin", "14.5", ""},
		{"vz", "darwin", "13.0", ""},
		{"vz", "darwin", "12.7.4", "vmType vz needs macOS 13 (Ventura) or later, this Mac runs macOS 12.7.4: upgrade macOS, or use vmType qemu"},
		{"vz", "darwin", "unknown", `unexpected macOS version "unknown"`},
		{"vz", "linux", "", "vmType vz needs macOS (this host runs linux): use qemu"},
		{"qemu", "linux", "", ""},
		{"qemu", "darwin", "11.0", ""},
	} {
		err := checkVZ(tc.vmType, tc.goos, version(tc.version))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s on %s %s: %v, want %q", tc.vmType, tc.goos, tc.version, err, tc.want)
		}
	}
	boom := errors.New("sw_vers: not found")
	if err := checkVZ("vz", "darwin", func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Errorf("a failing sw_vers: %v", err)
	}
}

// TestGuestEnvIsShell sources guest.env in bash, as desktop.sh does, and
// checks every value arrives unchanged, quotes and spaces included.
func TestGuestEnvIsShell(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		prereq.Missing(t, prereq.Host, "bash: %v", err)
	}
	cfg, err := Config{
		Size:      "1280x800x16",
		Apps:      []string{"form", "firefox"},
		URL:       `http://127.0.0.1:8080/form?a=1&b='x' "y" $HOME`,
		File:      "it's here.txt",
		ConfigDir: t.TempDir(),
		Code:      true,
		Env:       []string{"GUEST_EXTRA=`date` \\n", "EMPTY="},
	}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "guest.env")
	if err := os.WriteFile(file, []byte(guestEnv(cfg)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bash, "-c", `set -eu; set -a; . "$1"; set +a; env -0`, "bash", file).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(string(out), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			got[k] = v
		}
	}
	for k, v := range map[string]string{
		"HOME": "/home/agent", "DISPLAY": ":99", "LANG": "C.UTF-8", "XAUTHORITY": "/home/agent/.Xauthority",
		"SCREEN_SIZE": "1280x800x16", "GUEST_APPS": "form firefox", "GUEST_URL": cfg.URL,
		"AGENTD_LISTEN": "127.0.0.1:7010", "GUEST_CONFIG_DIR": "/etc/agentd/config", "AGENTD_CODE": "1",
		"GUEST_FILE": "it's here.txt", "GUEST_EXTRA": "`date` \\n", "EMPTY": "",
	} {
		if got[k] != v {
			t.Errorf("%s=%q after sourcing guest.env, want %q", k, got[k], v)
		}
	}
}

func TestStageConfigDir(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "form"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "form", "fields.json"), []byte(`{"name":"text"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Config{Repo: "..", Agentd: self, ConfigDir: src}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "stage")
	if err := stage(cfg, dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "config", "form", "fields.json"))
	if err != nil || string(b) != `{"name":"text"}` {
		t.Fatalf("configuration file in the stage: %q, %v", b, err)
	}
	// The desktop user in the guest reads it: not private to the host user.
	if fi, err := os.Stat(filepath.Join(dir, "config", "form", "fields.json")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("staged configuration file: %v %v", fi, err)
	}

	if err := os.Symlink("/etc/passwd", filepath.Join(src, "passwd")); err != nil {
		t.Fatal(err)
	}
	err = stage(cfg, filepath.Join(t.TempDir(), "stage"))
	if err == nil || !strings.Contains(err.Error(), "only regular files and directories") {
		t.Fatalf("a symlink in the configuration directory: %v", err)
	}
}
