//go:build !(linux && cgo)

// Command agentd is the guest daemon. It drives X11 through robotgo, so it
// needs Linux and cgo; the host side (agentctl) builds without either.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "agentd: this build has no X11 input: build on Linux with CGO_ENABLED=1 (see 'make build')")
	os.Exit(1)
}
