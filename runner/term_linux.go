package runner

import "golang.org/x/sys/unix"

// TCSETSF sets the same attributes after flushing pending input.
const getTermios, setTermiosFlush = unix.TCGETS, unix.TCSETSF
