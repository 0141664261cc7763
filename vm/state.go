package vm

import (
	"fmt"
	"net"
	"path/filepath"

	"github.com/agentd-dev/agentd/internal/statedir"
)

// The host keeps each guest's private directory, StateRoot/<name>: the
// token, the rendered Lima template, and guest.json, which lets a later
// process (agentctl guest down) find the guest again with Open.
const (
	tokenName = "token"
	limaYAML  = "lima.yaml"
	stateJSON = "guest.json"
	stageName = "stage"
)

// state is guest.json.
type state struct {
	Name      string   `json:"name"`
	Addr      string   `json:"addr"`
	TokenFile string   `json:"token_file"`
	Limactl   string   `json:"limactl"`
	Arch      string   `json:"arch"`
	VMType    string   `json:"vm_type"`
	Size      string   `json:"size"`
	Apps      []string `json:"apps"`
}

// StateRoot returns the private directory under which VM guests keep their
// host-side state: $XDG_RUNTIME_DIR/agentd-vm, else <tmp>/agentd-vm-<uid>
// (see statedir).
func StateRoot() (string, error) { return statedir.Root("agentd-vm") }

func stateRoot(cfg Config) (string, error) {
	if cfg.StateRoot == "" {
		return StateRoot()
	}
	return cfg.StateRoot, statedir.Ensure(cfg.StateRoot)
}

func writeState(dir string, s state) error {
	if err := statedir.WriteJSON(filepath.Join(dir, stateJSON), s); err != nil {
		return fmt.Errorf("guest state: %w", err)
	}
	return nil
}

func readState(dir string) (state, error) {
	var s state
	err := statedir.ReadJSON(filepath.Join(dir, stateJSON), &s)
	return s, err
}

// freePort is a port on 127.0.0.1 that nothing listens on right now, for
// Lima's forward. Another program could take it before Lima does; then
// the forward fails and Up times out saying so.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
