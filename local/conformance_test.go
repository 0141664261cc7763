package local

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/guest/backend/backendtest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/poll"
)

// fileDesktop is a desktop with no applications and one file, for the
// suite to read back.
type fileDesktop struct{}

const helloText = "hello from a local desktop\n"

func (fileDesktop) Name() string     { return "file" }
func (fileDesktop) Size() (int, int) { return 0, 0 }
func (fileDesktop) Local(dir string, _ *Config) (Prepared, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	return preparedDir(dir), os.WriteFile(filepath.Join(dir, "hello.txt"), []byte(helloText), 0o600)
}

type preparedDir string

func (p preparedDir) Home() string { return string(p) }
func (p preparedDir) Outputs() backend.Outputs {
	return backend.Outputs{NoteFile: filepath.Join(string(p), "hello.txt")}
}
func (p preparedDir) Close() error { return os.RemoveAll(string(p)) }

var _ Desktop = fileDesktop{}

func init() { backend.RegisterDesktop(fileDesktop{}) }

// TestConformance runs the guest backends' suite on real local guests:
// Xvfb, openbox and the real agentd; a named guest runs under this test
// binary as its supervisor (TestMain).
func TestConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Factory{
		New: func(t *testing.T) (backend.Backend, backend.Spec) {
			requireX(t)
			return Backend{}, backend.Spec{Width: 640, Height: 480, AgentdPath: agentdtest.Binary(t), Desktop: fileDesktop{}}
		},
		ReadBack: "hello.txt",
		Want:     helloText,
		Left: func(d backend.Description) []string {
			var left []string
			work := guestWork(d)
			if _, err := os.Stat(work); !os.IsNotExist(err) {
				left = append(left, "the guest's directory "+work)
			}
			n := strings.TrimPrefix(d.Display, ":")
			for _, f := range []string{"/tmp/.X" + n + "-lock", "/tmp/.X11-unix/X" + n} {
				if _, err := os.Lstat(f); !os.IsNotExist(err) {
					left = append(left, f)
				}
			}
			return append(left, processesMentioning(work)...)
		},
		// Every process of the guest has its directory on its command line
		// or in its environment.
		Vanish: func(t *testing.T, d backend.Description) {
			work := guestWork(d)
			for _, p := range processesMentioning(work) {
				pid, _, _ := strings.Cut(p, ":")
				if n, err := strconv.Atoi(pid); err == nil && n != os.Getpid() {
					_ = syscall.Kill(n, syscall.SIGKILL)
				}
			}
			poll.Until(t, 30*time.Second, "the guest's processes are gone", func() bool { return len(processesMentioning(work)) == 0 })
		},
	})
}

// guestWork is the directory holding a guest's state, desktop and token.
func guestWork(d backend.Description) string { return filepath.Dir(filepath.Dir(d.TokenFile)) }

// processesMentioning lists processes whose command line or environment
// mentions s.
func processesMentioning(s string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		for _, f := range []string{"cmdline", "environ"} {
			data, _ := os.ReadFile(filepath.Join("/proc", e.Name(), f))
			if strings.Contains(string(data), s) {
				out = append(out, e.Name()+": "+strings.ReplaceAll(string(data), "\x00", " "))
				break
			}
		}
	}
	return out
}
