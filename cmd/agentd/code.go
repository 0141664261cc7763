//go:build linux && cgo

package main

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/agentd-dev/agentd/codeexec"
)

// startCode sets up --code. The workers run as agentd's own user, so agentd
// first makes itself non-dumpable: its memory and /proc files (the token
// among them) are then closed to processes of the same user, the workers
// included; and the workers close the token file to themselves.
func startCode(display, python, dir, tokenFile string, scrollStep int, logf func(string, ...any)) (*codeexec.Service, error) {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("--code: make agentd non-dumpable: %w", err)
	}
	var hide []string
	if tokenFile != "" {
		hide = []string{tokenFile}
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
