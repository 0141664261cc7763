// Command fakeagentd stands in for agentd in the local package's tests: it
// takes agentd's command line, checks what the guest hands it (token file
// mode, a reachable display), writes --addr-file and serves /healthz. Its
// x-wait is agentd's own.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentd-dev/agentd/agentd/xwait"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "x-wait" {
		// The local backend's X checks are agentd's real ones.
		if err := xwait.Main(context.Background(), os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "agentd:", err)
			os.Exit(1)
		}
		return
	}
	display := flag.String("display", "", "X display")
	listen := flag.String("listen", "", "TCP address")
	tokenFile := flag.String("token-file", "", "token file")
	addrFile := flag.String("addr-file", "", "address file")
	fail := flag.String("fail", "", "print this and exit 1 (tests a failing agentd)")
	leakShm := flag.Bool("leak-shm", false, "create a System V shared memory segment and never remove it")
	flag.Parse()
	if *fail != "" {
		fmt.Fprintln(os.Stderr, *fail)
		os.Exit(1)
	}
	if err := run(*display, *listen, *tokenFile, *addrFile, *leakShm); err != nil {
		fmt.Fprintln(os.Stderr, "fakeagentd:", err)
		os.Exit(1)
	}
}

func run(display, listen, tokenFile, addrFile string, leakShm bool) error {
	fi, err := os.Stat(tokenFile)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o600 {
		return fmt.Errorf("token file mode %o", fi.Mode().Perm())
	}
	if os.Getenv("DISPLAY") != display {
		return fmt.Errorf("DISPLAY=%q, --display %q", os.Getenv("DISPLAY"), display)
	}
	sock := filepath.Join("/tmp/.X11-unix", "X"+strings.TrimPrefix(display, ":"))
	if _, err := os.Stat(sock); err != nil {
		return fmt.Errorf("display socket: %w", err)
	}
	if leakShm {
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
		if err != nil {
			return fmt.Errorf("shmget: %w", err)
		}
		fmt.Printf("shm %d\n", id)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if err := os.WriteFile(addrFile+".tmp", []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.Rename(addrFile+".tmp", addrFile); err != nil {
		return err
	}
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, `{"ok":true}`) })
	go func() { _ = http.Serve(ln, nil) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	return nil
}
