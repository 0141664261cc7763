package xvfbtest

import (
	"net"
	"os"
	"strings"
	"testing"
)

func TestStartTwoDisplays(t *testing.T) {
	a := Start(t, 320, 200)
	b := Start(t, 320, 200)
	if a.Display == b.Display {
		t.Fatalf("two servers share display %s", a.Display)
	}
	if !strings.HasPrefix(a.Display, ":") {
		t.Fatalf("display %q", a.Display)
	}
	sock := "/tmp/.X11-unix/X" + strings.TrimPrefix(a.Display, ":")
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("socket of a running server: %v", err)
	}
	a.Stop()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left after Stop: %v", err)
	}
}

func TestDownReservesTheDisplayUntilRestart(t *testing.T) {
	a := Start(t, 320, 200)
	if err := a.Down(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("unix", "@/tmp/.X11-unix/X"+strings.TrimPrefix(a.Display, ":")); err == nil {
		t.Fatal("a client reached the display while it was down")
	}
	b := Start(t, 320, 200)
	if b.Display == a.Display {
		t.Fatalf("another Xvfb took reserved display %s", a.Display)
	}
	if err := a.Restart(); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("unix", "/tmp/.X11-unix/X"+strings.TrimPrefix(a.Display, ":"))
	if err != nil {
		t.Fatalf("restarted display: %v", err)
	}
	conn.Close()
}
