//go:build !(linux && cgo)

// Command agentd-bench-probe is the measuring helper of `agentctl bench`. It
// measures robotgo, so it needs Linux and cgo, like agentd.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "agentd-bench-probe: this build has no X11: build on Linux with CGO_ENABLED=1 (see 'make build')")
	os.Exit(1)
}
