package docker

import (
	"strings"
	"testing"
	"time"
)

// firefoxTitle is the Firefox window's title, read in the guest with xprop
// ("" while there is no such window).
const firefoxTitle = `for id in $(xprop -root _NET_CLIENT_LIST | grep -o '0x[0-9a-f]*'); do
  if xprop -id "$id" WM_CLASS | grep -qF '"agentd-browser"'; then xprop -id "$id" _NET_WM_NAME; fi
done`

// TestDesktopAppsCannotReadTheToken: the desktop's applications run as
// agentd's user. Firefox, started as the entrypoint starts every
// application, is told to open agentd's token (file:///run/agentd/token, as
// a typed URL, a link or a redirect would have it): it shows an error page,
// not the file. A program started the same way (`agentd app --hide
// /run/agentd`) reads neither the token nor agentd's memory or descriptors.
func TestDesktopAppsCannotReadTheToken(t *testing.T) {
	cli := needImage(t)
	g := upGuest(t, Config{Apps: []string{"firefox"}, URL: "file:///run/agentd/token"})
	tok := token(t, g)

	// Firefox names the error page in its title; the file, had it been
	// read, would be shown under its own name.
	deadline := time.Now().Add(time.Minute)
	for {
		title := execOutput(t, cli, g, "bash", "-c", firefoxTitle)
		if strings.Contains(title, "Problem loading page") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Firefox shows no error page for agentd's token file after a minute: its title is %q", title)
		}
		time.Sleep(500 * time.Millisecond)
	}

	out := execOutput(t, cli, g, "agentd", "app", "--hide", "/run/agentd", "--", "bash", "-c", `
		cat /run/agentd/token && echo read: token
		for p in /proc/[0-9]*; do
			[ "$(cat $p/comm 2>/dev/null)" = agentd ] || continue
			(exec 3<"$p/mem") 2>/dev/null && echo read: memory
			readlink "$p/fd/0" >/dev/null 2>&1 && echo read: descriptors
			cat "$p/root/run/agentd/token" 2>/dev/null && echo read: token through its root
			echo "saw agentd"
		done
		echo done`)
	if strings.Contains(out, tok) || strings.Contains(out, "read:") || !strings.Contains(out, "saw agentd\ndone") {
		t.Errorf("a program started as the desktop's applications are:\n%s", out)
	}
}
