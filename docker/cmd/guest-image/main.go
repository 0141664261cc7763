// Command guest-image builds the Docker guest image from docker/Dockerfile
// through the Engine API, with docker/Dockerfile.dockerignore applied to
// the context (the engine's classic builder, unlike BuildKit, leaves that
// to the client), and prints the build's output as it comes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/docker"
)

func main() {
	contextDir := flag.String("context", ".", "the build context: the repository root")
	tag := flag.String("tag", docker.DefaultImage, "the image's name")
	network := flag.String("network", "", `network of the build's RUN steps ("host" where a bridge cannot reach the package mirror)`)
	noCache := flag.Bool("no-cache", false, "rebuild every layer")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	err := docker.Build(ctx, docker.BuildOptions{
		Context: *contextDir,
		Tag:     *tag,
		Network: *network,
		NoCache: *noCache,
	}, func(line string) { fmt.Println(line) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "guest-image:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "guest-image: built %s in %v\n", *tag, time.Since(start).Round(time.Second))
}
