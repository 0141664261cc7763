package docker

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// These need no Docker engine.

func TestContextFollowsTheDockerfilesIgnoreFile(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":                           "module x\n",
		"main.go":                          "package main\n",
		"main_test.go":                     "package main\n",
		".git/HEAD":                        "ref\n",
		"bin/agentd":                       "binary",
		"docker/Dockerfile":                "FROM scratch\n",
		"docker/Dockerfile.dockerignore":   ".git\nbin\n**/*_test.go\n!keep/*_test.go\n",
		"docker/entrypoint.sh":             "#!/bin/sh\n",
		"keep/kept_test.go":                "package keep\n",
		"pkg/sub/code.go":                  "package sub\n",
		"pkg/sub/testdata/fixture_test.go": "x",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "docker/entrypoint.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	excludes, err := readIgnore(dir, DefaultDockerfile)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeContext(&buf, dir, DefaultDockerfile, excludes); err != nil {
		t.Fatal(err)
	}
	got := map[string]*tar.Header{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[strings.TrimSuffix(h.Name, "/")] = h
	}
	for _, want := range []string{"go.mod", "main.go", "docker/Dockerfile", "docker/Dockerfile.dockerignore", "docker/entrypoint.sh", "keep/kept_test.go", "pkg/sub/code.go"} {
		if got[want] == nil {
			t.Errorf("%s is missing from the context", want)
		}
	}
	for _, unwanted := range []string{"main_test.go", ".git", ".git/HEAD", "bin", "bin/agentd", "pkg/sub/testdata/fixture_test.go"} {
		if got[unwanted] != nil {
			t.Errorf("%s is in the context", unwanted)
		}
	}
	if h := got["docker/entrypoint.sh"]; h != nil && h.Mode&0o111 == 0 {
		t.Errorf("entrypoint.sh lost its exec bits: %o", h.Mode)
	}
	for name, h := range got {
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
			t.Errorf("%s is owned by %d:%d (%s), want root", name, h.Uid, h.Gid, h.Uname)
		}
	}
}

func TestBaseImagesSkipsStages(t *testing.T) {
	p := filepath.Join(t.TempDir(), "Dockerfile")
	df := "FROM golang:1.26-bookworm AS build\nRUN x\nfrom --platform=linux/amd64 debian:bookworm-slim as runtime\nFROM build\nCOPY --from=build /a /b\n"
	if err := os.WriteFile(p, []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := baseImages(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"golang:1.26-bookworm", "debian:bookworm-slim"}; !slices.Equal(got, want) {
		t.Fatalf("baseImages = %q, want %q", got, want)
	}
}

func TestStreamBuildRelaysLinesAndFailsOnError(t *testing.T) {
	body := `{"stream":"Step 1/2 : FROM x\n"}{"stream":" ---> abc"}{"stream":"\n"}` +
		`{"status":"Pulling"}{"stream":"\n\n"}{"stream":"last without newline"}`
	var lines []string
	if err := streamBuild(strings.NewReader(body), func(l string) { lines = append(lines, l) }); err != nil {
		t.Fatal(err)
	}
	want := []string{"Step 1/2 : FROM x", " ---> abc", "Pulling", "last without newline"}
	if !slices.Equal(lines, want) {
		t.Fatalf("lines = %q, want %q", lines, want)
	}
	err := streamBuild(strings.NewReader(`{"stream":"Step 2\n"}{"errorDetail":{"message":"RUN failed"},"error":"RUN failed"}`), func(string) {})
	if err == nil || err.Error() != "RUN failed" {
		t.Fatalf("err = %v, want the build's error", err)
	}
}

func TestConfigChecks(t *testing.T) {
	for _, cfg := range []Config{
		{Name: "../escape"},
		{Name: "a/b"},
		{Size: "1280"},
		{Size: "10x10"},
		{Size: "1280x800x8"},
		{Size: "99999x800"},
	} {
		if _, err := cfg.withDefaults(); err == nil {
			t.Errorf("%+v was accepted", cfg)
		}
	}
	cfg, err := Config{Size: "1280x800x16"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Name, "agentd-guest-") || cfg.Image != DefaultImage || cfg.Memory != DefaultMemory || cfg.PIDs != DefaultPIDs {
		t.Errorf("defaults not applied: %+v", cfg)
	}
}
