// Package desktop is the desktop of the no-API-key exercise (docs/design.md, "The exercise"): a
// real browser (Firefox ESR, sandboxed) showing a pickup form served by a
// local record server, and a real text editor (mousepad) open on an empty
// note, each at a fixed place on a 1440×900 screen (see layout.go).
//
// Prepare writes everything the applications need into a private
// directory (browser profile, editor settings, window manager rules, the
// note) and starts the record server; Configure adds the applications to a
// local guest's configuration. Results are read back from the file system:
// Records for the form, NoteFile for the editor.
package desktop

import (
	"context"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/local"
	"github.com/agentd-dev/agentd/tools/exercise/form"
)

// Window classes the applications are started with (WM_CLASS class), by
// which the window manager places them and Up waits for them. The guest
// entrypoint (docker/entrypoint.sh) starts them with the same classes.
const (
	BrowserClass = "agentd-browser"
	EditorClass  = "agentd-editor"
)

// Config configures the exercise desktop.
type Config struct {
	// Dir is the desktop's private directory; Prepare creates it (0700)
	// and it must not exist yet.
	Dir string
	// FirefoxPath and MousepadPath default to "firefox-esr" and "mousepad"
	// on $PATH.
	FirefoxPath  string
	MousepadPath string
}

// Desktop is a prepared exercise desktop.
type Desktop struct {
	Dir      string
	NoteFile string // the editor's file, initially empty
	Record   *form.RecordServer

	cfg           Config
	openboxConfig string
	profile       string
}

// Prepare creates the desktop's files and starts its record server.
func Prepare(cfg Config) (*Desktop, error) {
	if cfg.Dir == "" {
		return nil, errors.New("exercise: Config.Dir is required")
	}
	if cfg.FirefoxPath == "" {
		cfg.FirefoxPath = "firefox-esr"
	}
	if cfg.MousepadPath == "" {
		cfg.MousepadPath = "mousepad"
	}
	if err := os.Mkdir(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("exercise: %w", err)
	}
	d := &Desktop{
		Dir:           cfg.Dir,
		NoteFile:      filepath.Join(cfg.Dir, RemoteNote),
		cfg:           cfg,
		openboxConfig: filepath.Join(cfg.Dir, openboxConfigName),
		profile:       filepath.Join(cfg.Dir, firefoxProfileName),
	}
	if err := d.writeFiles(); err != nil {
		_ = os.RemoveAll(cfg.Dir)
		return nil, fmt.Errorf("exercise: %w", err)
	}
	// The same place as in a remote guest's home (RemoteRecords).
	rs, err := form.NewRecordServer(filepath.Join(cfg.Dir, filepath.FromSlash(RemoteRecords)))
	if err != nil {
		_ = os.RemoveAll(cfg.Dir)
		return nil, fmt.Errorf("exercise: %w", err)
	}
	d.Record = rs
	return d, nil
}

func (d *Desktop) writeFiles() error {
	if err := os.WriteFile(d.NoteFile, nil, 0o600); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(d.Dir, filepath.Dir(filepath.FromSlash(RemoteRecords))), 0o700); err != nil {
		return err
	}
	return WriteConfig(d.Dir)
}

// Names of the configuration files in a desktop's directory; the guest
// entrypoint (docker/entrypoint.sh, GUEST_CONFIG_DIR) reads the same names.
const (
	openboxConfigName  = "openbox-rc.xml"
	firefoxProfileName = "firefox-profile"
	editorConfigName   = "mousepad-config"
)

// WriteConfig writes the applications' configuration into dir: the window
// manager's rules, the browser profile and the editor's settings. A Docker
// or VM guest gets this directory as its GUEST_CONFIG_DIR.
func WriteConfig(dir string) error {
	files := []struct {
		path, content string
	}{
		{filepath.Join(dir, openboxConfigName), openboxRC},
		{filepath.Join(dir, firefoxProfileName, "user.js"), firefoxPrefs},
		{filepath.Join(dir, firefoxProfileName, "chrome", "userChrome.css"), userChromeCSS},
		{filepath.Join(dir, editorConfigName, "glib-2.0", "settings", "keyfile"), mousepadSettings},
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			return fmt.Errorf("exercise: %w", err)
		}
		if err := os.WriteFile(f.path, []byte(f.content), 0o600); err != nil {
			return fmt.Errorf("exercise: %w", err)
		}
	}
	return nil
}

func (d *Desktop) editorConfig() string { return filepath.Join(d.Dir, editorConfigName) }

// Configure sets a local guest's screen size, window manager rules and
// applications for this desktop.
func (d *Desktop) Configure(cfg *local.Config) {
	cfg.Width, cfg.Height = ScreenWidth, ScreenHeight
	cfg.WindowManagerConfig = d.openboxConfig
	cfg.Apps = append(cfg.Apps, d.Apps()...)
}

// Apps returns the editor and the browser as applications of a local
// guest. Each is ready once its window is exactly where layout.go says;
// the browser also once the form page is painted where layout.go says.
// The browser starts last, so it has the keyboard focus at first.
func (d *Desktop) Apps() []local.App {
	return []local.App{
		{
			Name: "mousepad",
			Path: d.cfg.MousepadPath,
			Args: []string{"--disable-server", "--class", EditorClass, "--encoding", "UTF-8", d.NoteFile},
			// Settings come from a key file in the desktop's directory
			// instead of dconf: no session bus, nothing shared.
			Env:         []string{"GSETTINGS_BACKEND=keyfile", "XDG_CONFIG_HOME=" + d.editorConfig()},
			WindowClass: EditorClass,
			Ready: func(_ context.Context, win image.Rectangle) error {
				return checkWindow("editor", win, image.Rect(EditorX, EditorY, EditorX+EditorWidth, EditorY+EditorHeight))
			},
		},
		{
			Name: "firefox",
			Path: d.cfg.FirefoxPath,
			// Never --no-sandbox: the content processes keep their
			// seccomp and namespace sandbox, also as root.
			Args: []string{"--new-instance", "--profile", d.profile, "--class", BrowserClass, d.Record.URL()},
			// No crash reporter dialog.
			Env:         []string{"MOZ_CRASHREPORTER_DISABLE=1"},
			WindowClass: BrowserClass,
			Ready:       d.browserReady,
		},
	}
}

func checkWindow(what string, got, want image.Rectangle) error {
	if got != want {
		return fmt.Errorf("%s window at %v, layout says %v", what, got, want)
	}
	return nil
}

// browserReady waits for the form page's report and checks that the page
// is where the layout constants put it.
func (d *Desktop) browserReady(ctx context.Context, win image.Rectangle) error {
	if err := checkWindow("browser", win, image.Rect(BrowserX, BrowserY, BrowserX+BrowserWidth, BrowserY+BrowserHeight)); err != nil {
		return err
	}
	rep, err := d.Record.PageLoaded(ctx)
	if err != nil {
		return err
	}
	return CheckPage(rep)
}

// CheckPage verifies a page report against layout.go: the page fills the
// browser window at one device pixel per CSS pixel, and every click target
// lies well inside its control.
func CheckPage(rep form.PageReport) error {
	var errs []error
	vp := rep.Viewport
	if vp != (form.Rect{X: BrowserX, Y: BrowserY, W: BrowserWidth, H: BrowserHeight}) {
		errs = append(errs, fmt.Errorf("page viewport %+v, layout says %dx%d at (%d,%d) (toolbars or a notification bar showing?)",
			vp, BrowserWidth, BrowserHeight, BrowserX, BrowserY))
	}
	if rep.PixelRatio != 1 {
		errs = append(errs, fmt.Errorf("device pixel ratio %v, want 1", rep.PixelRatio))
	}
	targets := map[string]image.Point{
		"name":           {NameFieldX, NameFieldY},
		"date":           {DateFieldX, DateFieldY},
		"slot:Morning":   {SlotOptionX, SlotMorningY},
		"slot:Afternoon": {SlotOptionX, SlotAfternoonY},
		"slot:Evening":   {SlotOptionX, SlotEveningY},
		"fragile":        {FragileX, FragileY},
		"submit":         {SubmitX, SubmitY},
	}
	const margin = 8 // a click this far off the target still lands
	for name, p := range targets {
		r, ok := rep.Controls[name]
		if !ok {
			errs = append(errs, fmt.Errorf("page reports no control %q", name))
			continue
		}
		x, y := float64(p.X)-vp.X, float64(p.Y)-vp.Y
		if x < r.X+margin || x > r.X+r.W-margin || y < r.Y+margin || y > r.Y+r.H-margin {
			errs = append(errs, fmt.Errorf("control %q is at %+v (page pixels): click target (%d,%d) is not inside it", name, r, p.X, p.Y))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("form page does not match layout.go: %w", errors.Join(errs...))
	}
	return nil
}

// Home is the desktop's directory: a local guest reads the results back
// from it as a remote guest does from its user's home (RemoteNote,
// RemoteRecords).
func (d *Desktop) Home() string { return d.Dir }

// Outputs are the form's address and the result files.
func (d *Desktop) Outputs() backend.Outputs {
	return backend.Outputs{FormURL: d.Record.URL(), RecordFile: d.Record.RecordFile(), NoteFile: d.NoteFile}
}

// Close stops the record server and removes the desktop's directory. Read
// the results before.
func (d *Desktop) Close() error {
	return errors.Join(d.Record.Close(), os.RemoveAll(d.Dir))
}

// openboxRC places each application at its layout rectangle without
// decorations or border, focuses a window when it is clicked, and binds no
// keys, so every key combination the model presses reaches the application.
var openboxRC = fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <focus><focusNew>yes</focusNew><followMouse>no</followMouse></focus>
  <placement><policy>Smart</policy></placement>
  <theme><keepBorder>no</keepBorder><animateIconify>no</animateIconify></theme>
  <desktops><number>1</number></desktops>
  <margins><top>0</top><bottom>0</bottom><left>0</left><right>0</right></margins>
  <keyboard></keyboard>
  <mouse>
    <context name="Client">
      <mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Middle" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Right" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
    </context>
  </mouse>
  <applications>
%s%s  </applications>
</openbox_config>
`, appRule(BrowserClass, BrowserX, BrowserY, BrowserWidth, BrowserHeight),
	appRule(EditorClass, EditorX, EditorY, EditorWidth, EditorHeight))

func appRule(class string, x, y, w, h int) string {
	return fmt.Sprintf(`    <application class=%q type="normal">
      <decor>no</decor><maximized>no</maximized><fullscreen>no</fullscreen>
      <position force="yes"><x>%d</x><y>%d</y></position>
      <size><width>%d</width><height>%d</height></size>
    </application>
`, class, x, y, w, h)
}

// firefoxPrefs make a fresh profile open straight on the form: no first-run
// or what's-new pages, no default-browser question, no update or telemetry
// traffic or notification bars, no session restore, no form-history popups
// over the controls, 1 device pixel per CSS pixel, no animations. The
// sandbox prefs are left at their defaults.
var firefoxPrefs = prefs([][2]string{
	{"browser.aboutwelcome.enabled", "false"},
	{"browser.startup.homepage_override.mstone", `"ignore"`},
	{"startup.homepage_welcome_url", `""`},
	{"startup.homepage_welcome_url.additional", `""`},
	{"startup.homepage_override_url", `""`},
	{"browser.startup.page", "0"},
	{"browser.shell.checkDefaultBrowser", "false"},
	{"browser.newtabpage.enabled", "false"},
	{"browser.newtab.preload", "false"},
	{"browser.uitour.enabled", "false"},
	{"browser.translations.automaticallyPopup", "false"},
	{"sidebar.revamp", "false"},
	{"sidebar.verticalTabs", "false"},

	{"app.update.auto", "false"},
	{"extensions.update.enabled", "false"},
	{"extensions.getAddons.cache.enabled", "false"},
	{"browser.search.update", "false"},
	{"datareporting.policy.dataSubmissionEnabled", "false"},
	{"datareporting.policy.dataSubmissionPolicyBypassNotification", "true"},
	{"datareporting.healthreport.uploadEnabled", "false"},
	{"toolkit.telemetry.enabled", "false"},
	{"toolkit.telemetry.unified", "false"},
	{"toolkit.telemetry.archive.enabled", "false"},
	{"toolkit.telemetry.reportingpolicy.firstRun", "false"},
	{"app.normandy.enabled", "false"},
	{"app.shield.optoutstudies.enabled", "false"},
	{"browser.discovery.enabled", "false"},
	{"network.captive-portal-service.enabled", "false"},
	{"network.connectivity-service.enabled", "false"},
	{"browser.safebrowsing.malware.enabled", "false"},
	{"browser.safebrowsing.phishing.enabled", "false"},
	{"browser.safebrowsing.downloads.enabled", "false"},

	{"browser.sessionstore.resume_from_crash", "false"},
	{"toolkit.startup.max_resumed_crashes", "-1"},
	{"browser.tabs.warnOnClose", "false"},
	{"browser.warnOnQuit", "false"},

	{"browser.formfill.enable", "false"},
	{"signon.rememberSignons", "false"},
	{"extensions.formautofill.addresses.enabled", "false"},
	{"extensions.formautofill.creditCards.enabled", "false"},

	{"layout.css.devPixelsPerPx", `"1.0"`},
	{"toolkit.legacyUserProfileCustomizations.stylesheets", "true"},
	{"ui.prefersReducedMotion", "1"},
	{"toolkit.cosmeticAnimations.enabled", "false"},
})

func prefs(kv [][2]string) string {
	var b strings.Builder
	for _, p := range kv {
		fmt.Fprintf(&b, "user_pref(%q, %s);\n", p[0], p[1])
	}
	return b.String()
}

// userChromeCSS hides the toolbars: the page starts at the window's corner,
// so page pixels are screen pixels (checked by CheckPage).
const userChromeCSS = `#navigator-toolbox { visibility: collapse !important; }
`

// mousepadSettings: a larger font for the model's eyes; files saved exactly
// as typed (no added final newline, no backup); no session restore, auto
// save or reload prompts.
const mousepadSettings = `[org/xfce/mousepad/preferences/view]
use-default-monospace-font=false
font-name='DejaVu Sans Mono 16'

[org/xfce/mousepad/preferences/file]
add-last-end-of-line=false
make-backup=false
session-restore='never'
autosave-timer=0
monitor-changes=false
`
