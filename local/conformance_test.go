package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/guest/backend/backendtest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
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

// TestConformance runs the guest backends' suite on a real local guest:
// Xvfb, openbox and the real agentd.
func TestConformance(t *testing.T) {
	requireX(t)
	backendtest.Run(t, Backend{}, backendtest.Options{
		Spec:     backend.Spec{Width: 640, Height: 480, AgentdPath: agentdtest.Binary(t), Desktop: fileDesktop{}},
		ReadBack: "hello.txt",
		Want:     helloText,
		Left: func(d backend.Description) []string {
			var left []string
			work := filepath.Dir(filepath.Dir(d.TokenFile))
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
	})
}

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
