//go:build linux

// Package hidepaths closes a few paths to a program and every process it
// starts, with Landlock, and leaves the rest of the file system as it was.
// The guest starts its desktop applications this way so that they, and
// whatever a page or the model makes them open, cannot read agentd's token
// although they run as the same user (docs/design.md, "Safety").
//
// Landlock grants rather than denies: the ruleset handles every file-system
// right the kernel knows and grants them all beneath each entry of the
// tree, except the hidden paths and the directories leading to them, which
// get no rule. Landlock also keeps a sandboxed process from tracing, or
// reading the /proc files of, a process outside its domain (agentd), and on
// ABI 6 and later from signalling one.
package hidepaths

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped by Restrict's error when the kernel has no
// Landlock (older than 5.13, not enabled, or refused by a seccomp filter).
var ErrUnsupported = errors.New("Landlock is not available")

// Rights of each Landlock ABI version: ABI 1 has execute .. make_sym.
const (
	rightsABI1 = unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// ABI returns the kernel's Landlock ABI version, or an error wrapping
// ErrUnsupported.
func ABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, fmt.Errorf("%w (landlock_create_ruleset: %w)", ErrUnsupported, errno)
	}
	return int(v), nil
}

// Restrict hides each path in hidden (and everything beneath it) from the
// calling thread and whatever it execs. It locks the goroutine to its
// thread, since a Landlock domain and no_new_privs belong to a thread: the
// caller execs from the same goroutine (Exec does).
func Restrict(hidden []string) error {
	abi, err := ABI()
	if err != nil {
		return err
	}
	rights := uint64(rightsABI1)
	if abi >= 2 {
		rights |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		rights |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		rights |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	attr := unix.LandlockRulesetAttr{Access_fs: rights}
	size := unsafe.Sizeof(attr.Access_fs) // ABI 1-3 know only the file-system rights
	switch {
	case abi >= 6:
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL
		size = unsafe.Sizeof(attr)
	case abi >= 4:
		size = unsafe.Offsetof(attr.Scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)

	hide := map[string]bool{}
	onTheWay := map[string]bool{}
	for _, p := range hidden {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
		hide[real] = true
		for d := filepath.Dir(real); ; d = filepath.Dir(d) {
			onTheWay[d] = true
			if d == "/" {
				break
			}
		}
	}
	if hide["/"] {
		return errors.New("hide: refusing to hide /")
	}
	if err := allowBeneath(ruleset, "/", rights&fileRights, rights, hide, onTheWay); err != nil {
		return err
	}
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// allowBeneath grants every entry of dir its rights, descends into the
// directories on the way to a hidden path and skips the hidden ones.
func allowBeneath(ruleset int, dir string, fileRights, dirRights uint64, hide, onTheWay map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("hide: list %s: %w", dir, err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case hide[p]:
		case onTheWay[p]:
			if err := allowBeneath(ruleset, p, fileRights, dirRights, hide, onTheWay); err != nil {
				return err
			}
		default:
			if err := allow(ruleset, p, fileRights, dirRights); err != nil {
				return err
			}
		}
	}
	return nil
}

func allow(ruleset int, p string, fileRights, dirRights uint64) error {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		// Gone since it was listed, or not ours to open: nothing to grant.
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("hide: stat %s: %w", p, err)
	}
	var r uint64
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		// Its target has a rule of its own, or is hidden.
		return nil
	case unix.S_IFDIR:
		r = dirRights
	default:
		r = fileRights
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: r, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("hide: landlock_add_rule %s: %w", p, errno)
	}
	return nil
}

// Exec restricts itself as Restrict does and replaces this process with
// the program argv names (looked up in $PATH), environment unchanged.
// It returns only on error.
func Exec(hidden, argv []string) error {
	if len(argv) == 0 {
		return errors.New("no program to run")
	}
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	if err := Restrict(hidden); err != nil {
		return err
	}
	if err := unix.Exec(prog, argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", prog, err)
	}
	return nil
}
