package docker

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"
)

// mobyDefault is Docker's default seccomp profile, copied unchanged from
// github.com/moby/profiles/seccomp v0.3.0 (default.json; Apache-2.0,
// seccomp/LICENSE).
//
//go:embed seccomp/moby-default.json
var mobyDefault []byte

// browserSyscalls are what Chromium's sandbox needs beyond Docker's
// default profile, which allows them only with CAP_SYS_ADMIN or
// CAP_SYS_CHROOT (never given here): clone and unshare with
// CLONE_NEWUSER, CLONE_NEWPID and CLONE_NEWNET for the user, PID and
// network namespaces each renderer gets, and chroot for the empty root
// its sandbox helper moves it into (/proc/self/fdinfo). Inside those
// namespaces the process has no capabilities in the container's; mount,
// setns and the rest stay refused.
var browserSyscalls = []string{"clone", "unshare", "chroot"}

// BrowserSeccomp is the seccomp profile of a guest started with the
// browser (Config.Browser): Docker's default plus browserSyscalls,
// allowed whatever their arguments. JSON, as Docker's
// --security-opt seccomp= takes it.
var BrowserSeccomp = sync.OnceValues(func() ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(mobyDefault, &p); err != nil {
		return nil, fmt.Errorf("docker's default seccomp profile: %w", err)
	}
	rules, ok := p["syscalls"].([]any)
	if !ok {
		return nil, fmt.Errorf("docker's default seccomp profile: no syscalls list")
	}
	p["syscalls"] = append(rules, map[string]any{
		"names":   browserSyscalls,
		"action":  "SCMP_ACT_ALLOW",
		"comment": "agentd: Chromium's sandbox (user, PID and network namespaces; chroot)",
	})
	return json.Marshal(p)
})
