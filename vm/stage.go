package vm

import (
	"debug/elf"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// guestFiles are the VM's own scripts; everything else the guest runs comes
// from docker/, unchanged.
//
//go:embed guest
var guestFiles embed.FS

// dockerScripts are taken from Config.Repo/docker: the Docker image's
// provisioning, entrypoint and healthcheck.
var dockerScripts = []string{"provision.sh", "entrypoint.sh", "healthcheck.sh"}

// elfMachine is each Lima architecture's ELF machine.
var elfMachine = map[string]elf.Machine{"aarch64": elf.EM_AARCH64, "x86_64": elf.EM_X86_64}

// stage fills dir (which must not exist) with what the guest needs, for
// limactl copy: the docker scripts, the VM's scripts, agentd, the desktop's
// environment file and the configuration directory.
func stage(cfg Config, dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	for _, name := range dockerScripts {
		src := filepath.Join(cfg.Repo, "docker", name)
		if err := copyFile(src, filepath.Join(dir, name), 0o755); err != nil {
			return fmt.Errorf("stage: %w (Config.Repo must be the agentd source tree)", err)
		}
	}
	entries, err := guestFiles.ReadDir("guest")
	if err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	for _, e := range entries {
		b, err := guestFiles.ReadFile("guest/" + e.Name())
		if err != nil {
			return fmt.Errorf("stage: %w", err)
		}
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(e.Name(), ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, mode); err != nil {
			return fmt.Errorf("stage: %w", err)
		}
	}
	// In order, so a wrong agentd is always the error named first.
	bins := [][2]string{{"agentd", cfg.Agentd}}
	if slices.Contains(cfg.Apps, "form") {
		bins = append(bins, [2]string{"pickup-form", cfg.PickupForm})
	}
	for _, b := range bins {
		name, path := b[0], b[1]
		if err := checkBinary(name, path, cfg.Arch); err != nil {
			return err
		}
		if err := copyFile(path, filepath.Join(dir, name), 0o755); err != nil {
			return fmt.Errorf("stage: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "guest.env"), []byte(guestEnv(cfg)), 0o644); err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	if cfg.ConfigDir != "" {
		if err := copyTree(cfg.ConfigDir, filepath.Join(dir, "config")); err != nil {
			return fmt.Errorf("stage the configuration directory: %w", err)
		}
	}
	return nil
}

// checkBinary makes sure a program to copy in (agentd, pickup-form) is a
// Linux executable for the guest's architecture, so a wrong binary fails
// here and not at the desktop's start.
func checkBinary(name, path, arch string) error {
	hint := "make agentd-linux-" + goarch[arch] + " builds it"
	f, err := elf.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s for the %s guest is missing (%s): %s", name, arch, path, hint)
	}
	if err != nil {
		return fmt.Errorf("%s for the %s guest (%s) is not a Linux executable: %w: %s", name, arch, path, err, hint)
	}
	defer f.Close()
	if f.Machine != elfMachine[arch] {
		return fmt.Errorf("%s at %s is built for %s, the guest is %s: %s", name, path, f.Machine, arch, hint)
	}
	return nil
}

// guestEnv is /etc/agentd/guest.env: docker/entrypoint.sh's environment
// (its header comment lists it) as shell assignments, which desktop.sh
// sources.
func guestEnv(cfg Config) string {
	var b strings.Builder
	b.WriteString("# The desktop's environment (docker/entrypoint.sh), written by the vm package.\n")
	set := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, shellQuote(v)) }
	set("HOME", guestHome)
	set("LANG", "C.UTF-8")
	set("DISPLAY", display)
	set("XAUTHORITY", guestHome+"/.Xauthority")
	set("SCREEN_SIZE", cfg.Size)
	set("GUEST_APPS", strings.Join(cfg.Apps, " "))
	if cfg.URL != "" {
		set("GUEST_URL", cfg.URL)
	}
	if cfg.File != "" {
		set("GUEST_FILE", cfg.File)
	}
	set("AGENTD_LISTEN", fmt.Sprintf("127.0.0.1:%d", guestPort))
	if cfg.ConfigDir != "" {
		set("GUEST_CONFIG_DIR", configDir)
	}
	if cfg.Code {
		set("AGENTD_CODE", "1")
	}
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell: inside single quotes nothing is
// special but the quote itself.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// copyTree copies a directory of regular files and directories; anything
// else (a symlink, a device) is refused rather than followed into the guest.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, target, 0o644)
		default:
			return fmt.Errorf("%s: only regular files and directories are copied into the guest", path)
		}
	})
}
