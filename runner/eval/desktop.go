package eval

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/local"
	"github.com/agentd-dev/agentd/tools/exercise/desktop"
	"github.com/agentd-dev/agentd/tools/exercise/form"
)

// taskDesktop is one trial's desktop: the task's files in the home, its
// server, and its applications, each full screen at the screen's corner,
// so a page pixel is a screen pixel and scripted coordinates hold. A local
// guest runs the applications as its processes and the server on this
// machine's loopback; a guest of the guest image (docker, vm) runs them in
// the image's entrypoint, which offers an empty file for the editor and
// the pickup form as the only server (imageApps says so before a start).
type taskDesktop struct{ task *Task }

var (
	_ local.Desktop        = (*taskDesktop)(nil)
	_ backend.ImageDesktop = (*taskDesktop)(nil)
	_ local.Prepared       = (*preparedDesktop)(nil)
)

// Name is the desktop's name in pools' keys: a pool of the "eval" desktop
// would serve every task alike, which the tasks' setups forbid, so each
// task names its own.
func (d *taskDesktop) Name() string     { return "eval-" + d.task.ID }
func (d *taskDesktop) Size() (int, int) { return Screen.Width, Screen.Height }

// Where a task server's records are, relative to the home: a local
// guest's server (on this machine) appends to its home, the guest image's
// pickup form to its user's (docker/entrypoint.sh); either is read back
// through the guest's FileReader, like any file.
const (
	localConfig   = ".eval-desktop"
	localRecords  = localConfig + "/records.jsonl"
	remoteRecords = "form/records.jsonl"
	remoteReport  = "form/page.json"
	remoteFormURL = "http://127.0.0.1:8080"
)

// Local writes the task's files into dir (the home), starts its server and
// adds its applications to cfg.
func (d *taskDesktop) Local(dir string, cfg *local.Config) (local.Prepared, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("eval desktop: %w", err)
	}
	p := &preparedDesktop{dir: dir}
	fail := func(err error) (local.Prepared, error) {
		return nil, errors.Join(fmt.Errorf("eval desktop: %w", err), p.Close())
	}
	for _, f := range d.task.Setup.Files {
		if err := writeHomeFile(dir, f.Path, f.Content); err != nil {
			return fail(err)
		}
	}
	conf := filepath.Join(dir, localConfig)
	records := filepath.Join(dir, localRecords)
	if err := writeConfig(conf); err != nil {
		return fail(err)
	}
	server := ""
	var painted func(context.Context) error
	if srv := d.task.Setup.Server; srv != nil {
		if srv.Builtin == BuiltinPickupForm {
			rs, err := form.NewRecordServer(records)
			if err != nil {
				return fail(err)
			}
			p.closers = append(p.closers, rs.Close)
			server = trimSlash(rs.URL())
			painted = func(ctx context.Context) error { _, err := rs.PageLoaded(ctx); return err }
		} else {
			ts, err := startServer(srv, records)
			if err != nil {
				return fail(err)
			}
			p.closers = append(p.closers, ts.Close)
			server = ts.URL()
			painted = ts.Painted
		}
	}
	p.server = server
	cfg.Width, cfg.Height = Screen.Width, Screen.Height
	cfg.WindowManagerConfig = filepath.Join(conf, "openbox-rc.xml")
	for _, app := range d.appOrder() {
		switch app {
		case AppFirefox:
			url := expand(d.task.Setup.URL, server)
			if url == "" {
				url = "about:blank"
			}
			a := local.App{
				Name: "firefox", Path: "firefox-esr",
				// Never --no-sandbox: the content processes keep their sandbox.
				Args:        []string{"--new-instance", "--profile", filepath.Join(conf, "firefox-profile"), "--class", desktop.BrowserClass, url},
				Env:         []string{"MOZ_CRASHREPORTER_DISABLE=1"},
				WindowClass: desktop.BrowserClass,
			}
			if painted != nil && url != "about:blank" {
				a.Ready = func(ctx context.Context, _ image.Rectangle) error { return painted(ctx) }
			}
			cfg.Apps = append(cfg.Apps, a)
		case AppMousepad:
			args := []string{"--disable-server", "--class", desktop.EditorClass, "--encoding", "UTF-8"}
			if open := d.task.Setup.Open; open != "" {
				file := filepath.Join(dir, filepath.FromSlash(open))
				if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
					if err := writeHomeFile(dir, open, ""); err != nil {
						return fail(err)
					}
				}
				args = append(args, file)
			}
			cfg.Apps = append(cfg.Apps, local.App{
				Name: "mousepad", Path: "mousepad", Args: args,
				// Settings from a key file: no session bus, nothing shared.
				Env:         []string{"GSETTINGS_BACKEND=keyfile", "XDG_CONFIG_HOME=" + filepath.Join(conf, "mousepad-config")},
				WindowClass: desktop.EditorClass,
			})
		}
	}
	return p, nil
}

// appOrder is setup.apps with the focused one last.
func (d *taskDesktop) appOrder() []string {
	var order []string
	focus := d.task.Setup.Focus
	for _, a := range d.task.Setup.Apps {
		if a != focus {
			order = append(order, a)
		}
	}
	if focus != "" {
		order = append(order, focus)
	}
	return order
}

// imageProblem says why the task cannot run in the guest image, or "".
func imageProblem(t *Task) string {
	s := t.Setup
	switch {
	case len(s.Files) > 0:
		return "it places files (the guest image offers only an empty file for the editor)"
	case s.Server != nil && s.Server.Builtin != BuiltinPickupForm:
		return "it serves its own pages (the guest has no network; only the built-in pickup form runs inside it)"
	case s.Server != nil && s.URL != "{{server}}/":
		return "its browser opens another page than the pickup form's"
	case s.Server == nil && s.URL != "":
		return "its browser opens a page without a server"
	}
	return ""
}

// Image configures the guest image's entrypoint for the task.
func (d *taskDesktop) Image(dir string) (backend.ImageApps, error) {
	if why := imageProblem(d.task); why != "" {
		return backend.ImageApps{}, fmt.Errorf("task %s cannot run in the guest image: %s", d.task.ID, why)
	}
	if err := writeConfig(dir); err != nil {
		return backend.ImageApps{}, err
	}
	apps := backend.ImageApps{ConfigDir: dir, File: d.task.Setup.Open}
	if d.task.Setup.Server != nil {
		apps.Apps = append(apps.Apps, "form")
		apps.URL = remoteFormURL + "/"
		apps.Ready = waitReport
		apps.Outputs = backend.Outputs{FormURL: remoteFormURL, RecordFile: remoteRecords}
	}
	apps.Apps = append(apps.Apps, d.appOrder()...)
	return apps, nil
}

// waitReport waits for the pickup form's page report inside the guest: the
// entrypoint waited for the browser's window only.
func waitReport(ctx context.Context, files backend.FileReader) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := files.ReadFile(ctx, remoteReport)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("eval: the form's page report: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("eval: form page not loaded in the guest's browser: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// writeConfig writes the applications' configuration (the exercise's
// browser profile and editor settings) into dir, with window manager rules
// of its own: every application full screen at the corner, undecorated.
func writeConfig(dir string) error {
	if err := desktop.WriteConfig(dir); err != nil {
		return err
	}
	// The entrypoint (GUEST_CONFIG_DIR) and Local read this name.
	return os.WriteFile(filepath.Join(dir, "openbox-rc.xml"), []byte(openboxRC), 0o600)
}

// openboxRC: windows full screen without decorations, focus on click, no
// key bindings (every key reaches the application).
var openboxRC = fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <focus><focusNew>yes</focusNew><followMouse>no</followMouse></focus>
  <theme><keepBorder>no</keepBorder><animateIconify>no</animateIconify></theme>
  <desktops><number>1</number></desktops>
  <keyboard></keyboard>
  <mouse>
    <context name="Client">
      <mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
    </context>
  </mouse>
  <applications>
%s%s  </applications>
</openbox_config>
`, fullScreenRule(desktop.BrowserClass), fullScreenRule(desktop.EditorClass))

func fullScreenRule(class string) string {
	return fmt.Sprintf(`    <application class=%q type="normal">
      <decor>no</decor><maximized>no</maximized>
      <position force="yes"><x>0</x><y>0</y></position>
      <size><width>%d</width><height>%d</height></size>
    </application>
`, class, Screen.Width, Screen.Height)
}

// writeHomeFile writes content to rel inside home, making its folders.
func writeHomeFile(home, rel, content string) error {
	file := filepath.Join(home, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	return os.WriteFile(file, []byte(content), 0o600)
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

// preparedDesktop is a taskDesktop prepared for a local guest.
type preparedDesktop struct {
	dir     string
	server  string // "{{server}}", "" without one
	closers []func() error
}

func (p *preparedDesktop) Home() string { return p.dir }

// Outputs name the task server as the guest's form: "{{server}}" of the
// trial, also for a pooled guest prepared in another process.
func (p *preparedDesktop) Outputs() backend.Outputs {
	if p.server == "" {
		return backend.Outputs{}
	}
	return backend.Outputs{FormURL: p.server, RecordFile: localRecords}
}

// Close stops the server and removes the home: the checkers have read it.
func (p *preparedDesktop) Close() error {
	var errs []error
	for _, c := range p.closers {
		errs = append(errs, c())
	}
	return errors.Join(append(errs, os.RemoveAll(p.dir))...)
}
