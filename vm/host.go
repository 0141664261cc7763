package vm

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// minVZMacOS is the oldest macOS whose Virtualization.framework Lima's vz
// driver runs on.
const minVZMacOS = 13

// checkVZ refuses vmType vz where Lima cannot use it: anywhere but macOS,
// and on macOS before 13 (Ventura). macOSVersion reports the version,
// e.g. "14.5".
func checkVZ(vmType, goos string, macOSVersion func() (string, error)) error {
	if vmType != "vz" {
		return nil
	}
	if goos != "darwin" {
		return fmt.Errorf("vmType vz needs macOS (this host runs %s): use qemu", goos)
	}
	v, err := macOSVersion()
	v = strings.TrimSpace(v)
	if err != nil {
		return fmt.Errorf("vmType vz: read the macOS version: %w", err)
	}
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil {
		return fmt.Errorf("vmType vz: unexpected macOS version %q", v)
	}
	if major < minVZMacOS {
		return fmt.Errorf("vmType vz needs macOS %d (Ventura) or later, this Mac runs macOS %s: upgrade macOS, or use vmType qemu (much slower)", minVZMacOS, v)
	}
	return nil
}

// swVers asks macOS for its version.
func swVers(ctx context.Context) func() (string, error) {
	return func() (string, error) {
		out, err := exec.CommandContext(ctx, "sw_vers", "-productVersion").Output()
		if err != nil {
			return "", fmt.Errorf("sw_vers: %w", err)
		}
		return string(out), nil
	}
}

// checkHost is checkVZ for this host.
func checkHost(ctx context.Context, vmType string) error {
	return checkVZ(vmType, runtime.GOOS, swVers(ctx))
}
