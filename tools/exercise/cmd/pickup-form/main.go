// Command pickup-form serves the exercise's pickup form inside a guest that
// has no network to reach the host's record server (the Docker and VM
// guests): the browser in the guest posts to it on the guest's loopback,
// and the host reads the results back out as files through the guest's
// management channel (docker exec, limactl). agentd has no file access by
// design (docs/design.md, "Safety"), so the form cannot go through it.
//
// In --dir it appends each submission to records.jsonl and writes the
// page's latest layout report to page.json. It serves until SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agentd-dev/agentd/tools/exercise/form"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "loopback address to serve the form on")
	dir := flag.String("dir", "", "directory for records.jsonl and page.json (created 0700)")
	flag.Parse()
	if err := run(*listen, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "pickup-form:", err)
		os.Exit(1)
	}
}

func run(listen, dir string) error {
	if dir == "" {
		return fmt.Errorf("--dir is required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	srv, err := form.ListenRecordServer(listen, filepath.Join(dir, "records.jsonl"), filepath.Join(dir, "page.json"))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "pickup-form: serving %s\n", srv.URL())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	return srv.Close()
}
