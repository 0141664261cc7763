//go:build linux && cgo

package daemon

import (
	"context"
	"fmt"
	"log"
	"os/user"
	"strconv"
	"time"

	"github.com/agentd-dev/agentd/agentd/chromium"
)

// startBrowser starts Chromium on the display for --browser, as name when
// given (agentd as root), else as agentd's own user.
// Its window fills the screen; its own chatter (D-Bus, GPU probes) is
// dropped.
func startBrowser(display string, width, height int, name string, logger *log.Logger) (*chromium.Browser, error) {
	cfg := chromium.Config{Display: display, Width: width, Height: height}
	if name != "" {
		u, err := user.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("--browser-user: %w", err)
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			return nil, fmt.Errorf("--browser-user %s: not a usable non-root account", name)
		}
		cfg.User = &chromium.Account{UID: uint32(uid), GID: uint32(gid)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := chromium.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	logger.Printf("browser started on %s", display)
	return b, nil
}
