package dialaddr

import "testing"

func TestSplit(t *testing.T) {
	for addr, want := range map[string][2]string{
		"127.0.0.1:7000":          {"tcp", "127.0.0.1:7000"},
		"ws://127.0.0.1:7000/":    {"tcp", "127.0.0.1:7000"},
		"unix:/run/agentd.sock":   {"unix", "/run/agentd.sock"},
		"unix:///run/agentd.sock": {"unix", "/run/agentd.sock"},
		"[::1]:7000":              {"tcp", "[::1]:7000"},
	} {
		if n, a := Split(addr); n != want[0] || a != want[1] {
			t.Errorf("Split(%q) = %q, %q; want %q", addr, n, a, want)
		}
	}
}
