//go:build linux && cgo

// Command agentd is the guest daemon: it performs computer actions on an X11
// display and serves screenshots over an authenticated websocket. The
// program is agentd/daemon.
package main

import (
	"fmt"
	"os"

	// Named apart: the package's tests call a running agentd a daemon.
	program "github.com/agentd-dev/agentd/agentd/daemon"
)

func main() {
	if err := program.Main(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		os.Exit(1)
	}
}
