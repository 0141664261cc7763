package agentd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "0123456789abcdef0123\n", 0o600)
	cases := []struct {
		name, path, env, wantErr string
	}{
		{"file 0600", good, "", ""},
		{"group readable", write("g", "0123456789abcdef0123", 0o640), "", "readable by group or others"},
		{"world readable", write("w", "0123456789abcdef0123", 0o604), "", "chmod 600"},
		{"short", write("s", "short", 0o600), "", "shorter than 16"},
		{"whitespace inside", write("ws", "0123456789 abcdef0123", 0o600), "", "whitespace"},
		{"missing file", filepath.Join(dir, "nope"), "", "no such file"},
		{"directory", dir, "", "not a regular file"},
		{"env", "", "0123456789abcdef0123", ""},
		{"no token at all", "", "", "no token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(TokenEnv, c.env)
			tok, err := LoadToken(c.path)
			if c.wantErr == "" {
				if err != nil || string(tok) != "0123456789abcdef0123" {
					t.Fatalf("LoadToken = %q, %v", tok, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, c.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "0123456789abcdef") {
				t.Fatalf("error reveals the token: %v", err)
			}
		})
	}
}

func TestCheckListenAddr(t *testing.T) {
	cases := []struct {
		addr    string
		token   bool
		wantErr string
	}{
		{"127.0.0.1:7010", true, ""},
		{"[::1]:0", true, ""},
		{"localhost:7010", true, ""},
		{"172.17.0.2:7010", true, ""},
		{"127.0.0.1:7010", false, "without a token"},
		{"172.17.0.2:7010", false, "without a token"},
		{":7010", true, "all interfaces"},
		{"0.0.0.0:7010", true, "all interfaces"},
		{"[::]:7010", true, "all interfaces"},
		// Other spellings of the unspecified address bind every interface
		// too: parsed, not compared as strings.
		{"[::0]:7010", true, "all interfaces"},
		{"[0::]:7010", true, "all interfaces"},
		{"[0::0]:7010", true, "all interfaces"},
		{"[0:0:0:0:0:0:0:0]:7010", true, "all interfaces"},
		{"[0000:0000:0000:0000:0000:0000:0000:0000]:7010", true, "all interfaces"},
		{"[::ffff:0.0.0.0]:7010", true, "all interfaces"},
		{"[::ffff:0:0]:7010", true, "all interfaces"},
		{"[::%lo]:7010", true, "all interfaces"},
		{"[::ffff:0.0.0.0%eth0]:7010", true, "all interfaces"},
		// Names and the short forms inet_aton reads as 0.0.0.0: not IP
		// addresses.
		{"0:7010", true, "IP address"},
		{"0.0:7010", true, "IP address"},
		{"0x0:7010", true, "IP address"},
		{"000.000.000.000:7010", true, "IP address"},
		{"example.org:7010", true, "IP address"},
		{"[::ffff:127.0.0.1]:7010", true, ""},
		{"[fe80::1%lo]:7010", true, ""},
		{"7010", true, "missing port"},
	}
	for _, c := range cases {
		err := CheckListenAddr(c.addr, c.token)
		if c.wantErr == "" && err != nil {
			t.Errorf("%s: %v", c.addr, err)
		}
		if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s token=%v: err = %v, want %q", c.addr, c.token, err, c.wantErr)
		}
	}
}
