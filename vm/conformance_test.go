package vm

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/guest/backend/backendtest"
)

// TestConformance runs the guest backends' suite on the vm backend against
// the fake limactl; its agentd is a stand-in answering /healthz only.
func TestConformance(t *testing.T) {
	f := newFake(t, http.StatusOK)
	base := f.config(t)
	base.Apps, base.URL, base.File = nil, "", ""
	const note = "Zoë's note\n"
	backendtest.Run(t, Backend{Base: base}, backendtest.Options{
		NoAgentd: true,
		Plant: func(t *testing.T, d backend.Description) {
			file := filepath.Join(f.instance(base.Name), "fs", d.Home, "note.txt")
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(note), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		ReadBack: "note.txt",
		Want:     note,
		Left: func(d backend.Description) []string {
			var left []string
			for _, dir := range []string{f.instance(base.Name), filepath.Dir(d.TokenFile)} {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					left = append(left, dir)
				}
			}
			return left
		},
	})
}
