package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/internal/statedir"
)

// Desktop is what a guest shows besides agentd: applications and their
// settings. A backend shows the desktops whose form it understands: the
// guest image's (ImageDesktop, docker and vm) or local processes
// (local.Desktop).
type Desktop interface {
	// Name is the desktop's name, for --apps and Description.Apps.
	Name() string
	// Size is the screen the desktop is laid out for; 0, 0: any.
	Size() (width, height int)
}

// ImageDesktop is a desktop the guest image's entrypoint starts
// (docker/entrypoint.sh, in a container or a VM).
type ImageDesktop interface {
	Desktop
	// Image writes the applications' configuration into dir, a fresh
	// private directory that the guest gets a copy of, and says what the
	// entrypoint starts.
	Image(dir string) (ImageApps, error)
}

// ImageApps is what the guest image's entrypoint starts, and how to tell
// that it is ready.
type ImageApps struct {
	Apps      []string // GUEST_APPS, started in this order: form, firefox, mousepad
	URL       string   // GUEST_URL: the page the browser opens
	File      string   // GUEST_FILE: the file the editor opens, relative to the home
	ConfigDir string   // GUEST_CONFIG_DIR's source on the host; "" for none
	// Outputs are the results' places: URL as it is, files relative to the
	// desktop user's home.
	Outputs Outputs
	// Ready, if set, runs once agentd is healthy, with the guest's files;
	// Up fails with its error.
	Ready func(ctx context.Context, files FileReader) error
}

var desktops = map[string]Desktop{}

// RegisterDesktop makes a desktop available by its name, for --apps and
// for a local guest's supervisor, which starts it from its name.
func RegisterDesktop(d Desktop) { register(desktops, d.Name(), d, "RegisterDesktop") }

// LookupDesktop returns the desktop registered under name; "none" is nil.
func LookupDesktop(name string) (Desktop, error) {
	if name == "none" || name == "" {
		return nil, nil
	}
	mu.Lock()
	defer mu.Unlock()
	if d, ok := desktops[name]; ok {
		return d, nil
	}
	var names []string
	for n := range desktops {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("--apps %q: use %s", name, joinOr(append(names, "none")))
}

// BrowserAndEditor is the guest image's browser (Firefox ESR) and text
// editor (Mousepad) with no configuration: "desktop".
var BrowserAndEditor ImageDesktop = browserAndEditor{}

type browserAndEditor struct{}

func (browserAndEditor) Name() string     { return "desktop" }
func (browserAndEditor) Size() (int, int) { return 0, 0 }
func (browserAndEditor) Image(string) (ImageApps, error) {
	return ImageApps{Apps: []string{"mousepad", "firefox"}}, nil
}

func init() { RegisterDesktop(BrowserAndEditor) }

// StartImage is the one up path of the backends that run the guest image:
// it asks spec's desktop for its applications, has start create the guest
// with them (and keep apps.Outputs for its description, see InGuest), and
// waits for the desktop to be ready. The guest is taken down again when
// that fails.
func StartImage(ctx context.Context, spec Spec, start func(context.Context, ImageApps) (Instance, error)) (Instance, error) {
	var apps ImageApps
	if spec.Desktop != nil {
		d, ok := spec.Desktop.(ImageDesktop)
		if !ok {
			return nil, fmt.Errorf("desktop %q cannot run in the guest image", spec.Desktop.Name())
		}
		root, err := statedir.Root("agentd")
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp(root, "desktop-")
		if err != nil {
			return nil, fmt.Errorf("desktop configuration: %w", err)
		}
		defer os.RemoveAll(dir) // the guest gets a copy
		if apps, err = d.Image(dir); err != nil {
			return nil, err
		}
	}
	inst, err := start(ctx, apps)
	if err != nil {
		return nil, err
	}
	if apps.Ready != nil {
		files, ok := inst.(FileReader)
		if !ok {
			err = errors.New("the guest cannot read files back to check its desktop")
		} else {
			err = apps.Ready(ctx, files)
		}
		if err != nil {
			return nil, errors.Join(err, inst.Down(context.WithoutCancel(ctx)))
		}
	}
	return inst, nil
}

// InGuest turns outputs relative to the desktop user's home into places
// people can find: where ("container", "VM"), a colon and the path.
func (o Outputs) InGuest(where, home string) Outputs {
	for _, f := range []*string{&o.RecordFile, &o.NoteFile} {
		if *f != "" {
			*f = where + ":" + path.Join(home, *f)
		}
	}
	return o
}

// InstanceName names a named guest's container or VM: "agentd-" and the
// guest's name.
func InstanceName(guestName string) string { return "agentd-" + guestName }

// CheckImage is the Check of a backend that runs the guest image: the
// image starts agentd itself, and the desktop must be an ImageDesktop.
// where names the guest ("a container", "a VM").
func CheckImage(spec Spec, where string) error {
	if len(spec.AgentdArgs) > 0 {
		return fmt.Errorf("agentd's arguments %q are for local guests: the guest image starts agentd itself", spec.AgentdArgs)
	}
	if spec.Desktop != nil {
		if _, ok := spec.Desktop.(ImageDesktop); !ok {
			return fmt.Errorf("desktop %q cannot run in %s", spec.Desktop.Name(), where)
		}
	}
	return nil
}

// ImageMilestones returns host's milestones and those the guest image's
// entrypoint marked in its output logs ("entrypoint: mark NAME SECONDS",
// SECONDS with up to six decimals), in time order.
func ImageMilestones(host []Milestone, logs string) ([]Milestone, error) {
	out := slices.Clone(host)
	for line := range strings.Lines(logs) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "entrypoint: mark ")
		if !ok {
			continue
		}
		name, at, ok := strings.Cut(rest, " ")
		sec, frac, _ := strings.Cut(at, ".")
		s, err1 := strconv.ParseInt(sec, 10, 64)
		us, err2 := strconv.ParseInt((frac + "000000")[:6], 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad start mark %q", strings.TrimSpace(line))
		}
		out = append(out, Milestone{Name: name, At: time.Unix(s, us*1000)})
	}
	slices.SortStableFunc(out, func(a, b Milestone) int { return a.At.Compare(b.At) })
	return out, nil
}

// ImageFiles is what a guest running the guest image offers for reading
// back: files by absolute path in the guest, and its desktop's output.
type ImageFiles interface {
	ReadFile(ctx context.Context, file string) ([]byte, error)
	Logs(ctx context.Context, n int) (string, error)
}

// ImageInstance is the part of an Instance that the backends running the
// guest image share: its description, and files read relative to the
// desktop user's home. Such a backend's instance embeds it and adds
// Status, Down and Close.
type ImageInstance struct {
	Files ImageFiles
	Desc  Description
}

// Describe returns Desc.
func (i ImageInstance) Describe() Description { return i.Desc }

// ReadFile reads a file relative to the desktop user's home (Desc.Home).
func (i ImageInstance) ReadFile(ctx context.Context, rel string) ([]byte, error) {
	file, err := InHome(i.Desc.Home, rel)
	if err != nil {
		return nil, fmt.Errorf("%s guest %s: %w", i.Desc.Backend, i.Desc.Instance, err)
	}
	return i.Files.ReadFile(ctx, file)
}

// Logs returns the desktop's last n lines of output.
func (i ImageInstance) Logs(ctx context.Context, n int) (string, error) {
	return i.Files.Logs(ctx, n)
}
