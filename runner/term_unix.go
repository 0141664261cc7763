//go:build linux || darwin

package runner

import "golang.org/x/sys/unix"

func isTerminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), getTermios)
	return err == nil
}

// discardTypeahead drops what was typed before a question, so it cannot
// answer it.
func discardTypeahead(fd uintptr) {
	if t, err := unix.IoctlGetTermios(int(fd), getTermios); err == nil {
		_ = unix.IoctlSetTermios(int(fd), setTermiosFlush, t)
	}
}
