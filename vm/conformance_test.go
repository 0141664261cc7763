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
// a fresh fake limactl per subtest; its agentd is a stand-in answering
// /healthz only, so the screenshot and click are not run. The guests'
// state lives in the default places under a private XDG_RUNTIME_DIR, where
// the named subtest's other process finds them too.
func TestConformance(t *testing.T) {
	const note = "Zoë's note\n"
	var f *fakeEnv
	backendtest.Run(t, backendtest.Factory{
		New: func(t *testing.T) (backend.Backend, backend.Spec) {
			f = newFake(t, http.StatusOK)
			t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
			base := f.config(t)
			base.Apps, base.URL, base.File, base.StateRoot = nil, "", "", ""
			return Backend{Base: base}, backend.Spec{}
		},
		NoAgentd: true,
		Plant: func(t *testing.T, d backend.Description) {
			file := filepath.Join(f.instance(d.Instance), "fs", d.Home, "note.txt")
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
			for _, dir := range []string{f.instance(d.Instance), filepath.Dir(d.TokenFile)} {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					left = append(left, dir)
				}
			}
			return left
		},
		// As 'limactl delete --force' from another terminal would.
		Vanish: func(t *testing.T, d backend.Description) {
			if err := os.RemoveAll(f.instance(d.Instance)); err != nil {
				t.Fatal(err)
			}
		},
	})
}
