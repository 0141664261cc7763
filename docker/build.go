package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// DefaultDockerfile is the guest image's Dockerfile, relative to the
// repository root.
const DefaultDockerfile = "docker/Dockerfile"

// BuildOptions say how to build the guest image.
type BuildOptions struct {
	// Context is the build context: the repository root.
	Context string
	// Dockerfile is relative to Context. Default DefaultDockerfile. Its
	// ignore file (the Dockerfile's path + ".dockerignore", else
	// .dockerignore in Context) filters the context, as BuildKit does.
	Dockerfile string
	// Tag names the image. Default DefaultImage.
	Tag string
	// Network is the network of the build's RUN steps: empty for the
	// engine's default (a bridge), "host" where a bridge cannot reach the
	// package mirror or the Go module proxy.
	Network string
	// NoCache rebuilds every layer.
	NoCache bool
}

// goEnvArgs are the Go settings the Dockerfile takes as build arguments, so
// the build container fetches modules the way this machine does.
var goEnvArgs = []string{"GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GOFLAGS"}

// proxyArgs are the engine's predefined build arguments for HTTP proxies:
// passed through when set, and kept out of the image's history.
var proxyArgs = []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"}

// Build builds the guest image through the engine (the classic builder,
// which every engine has) with opts.Context as the context, sending each
// line of build output to progress. A first build takes minutes; later
// ones reuse the layer cache. The base images must be present or pullable
// (without a registry: docker/make-base-images.sh).
func Build(ctx context.Context, opts BuildOptions, progress func(string)) error {
	cli, err := NewClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if progress == nil {
		progress = func(string) {}
	}
	return build(ctx, cli, opts, progress)
}

func build(ctx context.Context, cli *client.Client, opts BuildOptions, say func(string)) error {
	if opts.Context == "" {
		return errors.New("docker build: no context directory")
	}
	if opts.Dockerfile == "" {
		opts.Dockerfile = DefaultDockerfile
	}
	if opts.Tag == "" {
		opts.Tag = DefaultImage
	}
	excludes, err := readIgnore(opts.Context, opts.Dockerfile)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeContext(pw, opts.Context, opts.Dockerfile, excludes)) }()
	defer pr.Close()

	res, err := cli.ImageBuild(ctx, pr, client.ImageBuildOptions{
		Tags:        []string{opts.Tag},
		Dockerfile:  filepath.ToSlash(opts.Dockerfile),
		BuildArgs:   buildArgs(),
		NetworkMode: opts.Network,
		NoCache:     opts.NoCache,
		Remove:      true,
		ForceRemove: true,
		Version:     "1", // the classic builder: BuildKit over the API needs a session
	})
	if err != nil {
		return fmt.Errorf("docker build %s: %w", opts.Tag, err)
	}
	defer res.Body.Close()
	if err := streamBuild(res.Body, say); err != nil {
		return fmt.Errorf("docker build %s: %w%s", opts.Tag, err, baseHint(ctx, cli, filepath.Join(opts.Context, opts.Dockerfile)))
	}
	return nil
}

// streamBuild relays the engine's build messages line by line and returns
// the build's error, if any.
func streamBuild(r io.Reader, say func(string)) error {
	dec := json.NewDecoder(r)
	var partial string
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("read build output: %w", err)
		}
		if m.Error != nil {
			return errors.New(m.Error.Message)
		}
		text := m.Stream
		if text == "" && m.Status != "" {
			text = m.Status + "\n"
		}
		lines := strings.Split(partial+text, "\n")
		partial = lines[len(lines)-1]
		for _, l := range lines[:len(lines)-1] {
			if l = strings.TrimRight(l, "\r"); strings.TrimSpace(l) != "" {
				say(l)
			}
		}
	}
	if strings.TrimSpace(partial) != "" {
		say(partial)
	}
	return nil
}

// baseHint names the Dockerfile's base images that are missing: the usual
// reason a build fails on a machine without a registry.
func baseHint(ctx context.Context, cli *client.Client, dockerfile string) string {
	bases, err := baseImages(dockerfile)
	if err != nil {
		return ""
	}
	var missing []string
	for _, b := range bases {
		if _, err := cli.ImageInspect(ctx, b); isNotFound(err) {
			missing = append(missing, b)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf(" (base image %s missing: without a registry, run docker/make-base-images.sh)", strings.Join(missing, ", "))
}

// baseImages lists the images a Dockerfile's FROM lines name, skipping
// references to its own stages.
func baseImages(dockerfile string) ([]string, error) {
	f, err := os.Open(dockerfile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	stages := map[string]bool{}
	var bases []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.EqualFold(fields[0], "FROM") {
			continue
		}
		args := fields[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "--") {
			args = args[1:]
		}
		if len(args) == 0 {
			continue
		}
		if !stages[strings.ToLower(args[0])] {
			bases = append(bases, args[0])
		}
		if len(args) == 3 && strings.EqualFold(args[1], "AS") {
			stages[strings.ToLower(args[2])] = true
		}
	}
	return bases, sc.Err()
}

// buildArgs are this machine's Go module settings and HTTP proxies.
func buildArgs() map[string]*string {
	args := map[string]*string{}
	for k, v := range goEnv() {
		if v != "" {
			args[k] = &v
		}
	}
	for _, k := range proxyArgs {
		if v := os.Getenv(k); v != "" {
			args[k] = &v
		}
	}
	return args
}

// goEnv reads the Go settings from `go env` (which sees the go env file as
// well as the environment), else from the environment alone.
func goEnv() map[string]string {
	env := map[string]string{}
	if out, err := exec.Command("go", append([]string{"env", "-json"}, goEnvArgs...)...).Output(); err == nil {
		if json.Unmarshal(out, &env) == nil {
			return env
		}
	}
	for _, k := range goEnvArgs {
		env[k] = os.Getenv(k)
	}
	return env
}

// readIgnore reads the Dockerfile's own ignore file, else the context's
// .dockerignore; neither is fine.
func readIgnore(contextDir, dockerfile string) ([]string, error) {
	for _, p := range []string{filepath.Join(contextDir, dockerfile+".dockerignore"), filepath.Join(contextDir, ".dockerignore")} {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("docker build: ignore file: %w", err)
		}
		defer f.Close()
		patterns, err := ignorefile.ReadAll(f)
		if err != nil {
			return nil, fmt.Errorf("docker build: ignore file %s: %w", p, err)
		}
		return patterns, nil
	}
	return nil, nil
}

// writeContext writes the build context as a tar stream: every regular
// file, directory and symlink under dir that the ignore patterns keep (the
// Dockerfile always), with numeric root ownership.
func writeContext(w io.Writer, dir, dockerfile string, excludes []string) error {
	pm, err := patternmatcher.New(excludes)
	if err != nil {
		return fmt.Errorf("docker build: ignore patterns: %w", err)
	}
	keep := filepath.ToSlash(filepath.Clean(dockerfile))
	tw := tar.NewWriter(w)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel != keep {
			excluded, err := pm.MatchesOrParentMatches(rel)
			if err != nil {
				return err
			}
			if excluded {
				if d.IsDir() && !mayReinclude(pm, rel) {
					return filepath.SkipDir
				}
				return nil
			}
		}
		return addToTar(tw, p, rel, d)
	})
	if err != nil {
		return fmt.Errorf("docker build: context: %w", err)
	}
	return tw.Close()
}

// mayReinclude says whether an exception pattern ("!x") could bring back
// something under an excluded directory, as the docker CLI decides it.
func mayReinclude(pm *patternmatcher.PatternMatcher, dir string) bool {
	if !pm.Exclusions() {
		return false
	}
	for _, pat := range pm.Patterns() {
		if pat.Exclusion() && strings.HasPrefix(pat.String()+"/", dir+"/") {
			return true
		}
	}
	return false
}

func addToTar(tw *tar.Writer, p, rel string, d fs.DirEntry) error {
	fi, err := d.Info()
	if err != nil {
		return err
	}
	var link string
	switch {
	case fi.Mode().IsRegular(), fi.IsDir():
	case fi.Mode()&fs.ModeSymlink != 0:
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	default:
		return nil // sockets, devices and pipes have no place in a context
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	hdr.Name = rel
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}
