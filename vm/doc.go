// Package vm runs agentd guests in virtual machines through Lima (docs/design.md, "Guests"):
// one VM per desktop, a Debian 12 cloud image for
// the host's architecture (vmType vz on macOS, qemu elsewhere), driven
// entirely by the limactl command. It is pure Go and builds for macOS: the
// host needs no cgo and no X11.
//
// Up renders the embedded Lima template (no host mounts; agentd's guest port
// on 127.0.0.1 forwarded to a port on the host's 127.0.0.1, every other
// port ignored), creates and starts the VM and copies in a staged
// directory: docker/provision.sh, docker/entrypoint.sh and
// docker/healthcheck.sh from the source tree; agentd (and the exercise's
// pickup-form) cross-compiled for the guest's architecture; the VM's own
// scripts from vm/guest; the desktop's environment file. It runs
// vm/guest/setup.sh, which provisions the guest with docker/provision.sh
// exactly as the Docker image is provisioned, then delivers the token and
// starts the desktop as a systemd service of the non-root user that runs
// docker/entrypoint.sh: Docker and VM desktops behave the same.
//
// The token is 32 random bytes made on the host, kept there in a 0600 file,
// and written into the guest through limactl's standard input (never on a
// command line or in the environment). agentd offers no file access:
// Guest.ReadFile reads results back through limactl, as the desktop user.
package vm
