package runner

import "golang.org/x/sys/unix"

// TIOCSETAF sets the same attributes after flushing pending input.
const getTermios, setTermiosFlush = unix.TIOCGETA, unix.TIOCSETAF
