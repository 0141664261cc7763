//go:build linux && cgo

package daemon

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agentd-dev/agentd/agentd/codeexec"
)

// startCode sets up --code. The workers run as agentd's own user (nobody
// when agentd is root), so agentd first makes itself non-dumpable: its
// memory and /proc files (the token among them) are then closed to
// processes of the same user, the workers included; and the workers close
// the token file and the X cookie to themselves.
func startCode(display, python, dir, tokenFile string, scrollStep int, logf func(string, ...any)) (*codeexec.Service, error) {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("--code: make agentd non-dumpable: %w", err)
	}
	var hide []string
	cookies := []string{os.Getenv("XAUTHORITY")}
	if home, err := os.UserHomeDir(); err == nil {
		cookies = append(cookies, filepath.Join(home, ".Xauthority"))
	}
	// Only files that exist: hiding a path closes its directory to new
	// files too.
	for _, p := range append([]string{tokenFile}, cookies...) {
		if _, err := os.Stat(p); p != "" && err == nil {
			hide = append(hide, p)
		}
	}
	svc, err := codeexec.New(codeexec.Options{
		Python:              python,
		Dir:                 dir,
		Pointer:             codeexec.NewXPointer(display).Position,
		Hide:                hide,
		ScrollPixelsPerStep: scrollStep,
		Logf:                logf,
	})
	if err != nil {
		return nil, fmt.Errorf("--code: %w", err)
	}
	return svc, nil
}
