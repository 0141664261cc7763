package chromium

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/agentd-dev/agentd/actions/browser"
)

// Config configures Start.
type Config struct {
	// Display is the X display the browser window opens on (":99").
	Display string
	// Exec is the browser binary; default "chromium".
	Exec string
	// User, when set, is the account the browser runs as (agentd running as
	// root must set it: Chromium refuses root with its sandbox on). Empty:
	// agentd's own user.
	User *Account
	// Width and Height are the window size in pixels; 0 takes 1280×800.
	Width, Height int
	// Output receives the browser's own standard output and error; nil
	// discards them.
	Output io.Writer
}

// Account is a user the browser runs as.
type Account struct {
	UID, GID uint32
}

// navigationTimeout bounds waiting for a page to load after navigate,
// new_tab, or an action that started a navigation.
const navigationTimeout = 30 * time.Second

// Browser is a running Chromium and the driver over it. Its methods are
// safe for concurrent use; they run one at a time.
type Browser struct {
	cfg     Config
	dataDir string

	allocCancel   context.CancelFunc
	browserCtx    context.Context
	browserCancel context.CancelFunc

	mu      sync.Mutex
	tabs    []*tab // in opening order
	active  *tab
	nextTab int
	refs    refTable

	policy loadPolicy
	wg     sync.WaitGroup // the load policy's goroutines
}

// tab is one page target. ctx is the chromedp context attached to it.
type tab struct {
	id     string
	target target.ID
	ctx    context.Context
	cancel context.CancelFunc // nil for the first tab, whose context is the browser's
}

// Start launches Chromium on cfg.Display with a fresh profile and returns
// the driver. ctx bounds only the start; Close stops the browser.
func Start(ctx context.Context, cfg Config) (*Browser, error) {
	if cfg.Display == "" {
		return nil, errors.New("chromium: no display")
	}
	if cfg.Exec == "" {
		cfg.Exec = "chromium"
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		cfg.Width, cfg.Height = 1280, 800
	}
	if cfg.User == nil && os.Geteuid() == 0 {
		return nil, errors.New("chromium: refusing to run the browser as root (Chromium needs --no-sandbox for that, which is never used): give a desktop user")
	}
	path, err := exec.LookPath(cfg.Exec)
	if err != nil {
		return nil, fmt.Errorf("chromium: %s not found (Debian package chromium): %w", cfg.Exec, err)
	}
	// Another user's profile goes under /tmp: agentd's own temporary
	// directory may be private to agentd (a local guest's is).
	base := ""
	if cfg.User != nil {
		base = "/tmp"
	}
	dataDir, err := os.MkdirTemp(base, "agentd-chromium-")
	if err != nil {
		return nil, fmt.Errorf("chromium: profile directory: %w", err)
	}
	if cfg.User != nil {
		if err := os.Chown(dataDir, int(cfg.User.UID), int(cfg.User.GID)); err != nil {
			os.RemoveAll(dataDir)
			return nil, fmt.Errorf("chromium: profile directory: %w", err)
		}
	}
	out := cfg.Output
	if out == nil {
		out = io.Discard
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dataDir),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// Stated, so that chromedp never adds --no-sandbox when agentd
		// itself is root: the browser drops to cfg.User instead.
		chromedp.Flag("no-sandbox", false),
		chromedp.Flag("remote-debugging-pipe", true),
		chromedp.Flag("window-position", "0,0"),
		chromedp.WindowSize(cfg.Width, cfg.Height),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.Flag("force-device-scale-factor", "1"),
		chromedp.NoInheritEnv,
		chromedp.Env("DISPLAY="+cfg.Display, "HOME="+dataDir, "XDG_CONFIG_HOME="+filepath.Join(dataDir, "config"),
			"XDG_CACHE_HOME="+filepath.Join(dataDir, "cache"), "PATH=/usr/bin:/bin", "LANG=C.UTF-8"),
		chromedp.CombinedOutput(out),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if cfg.User != nil {
				attr.Credential = &syscall.Credential{Uid: cfg.User.UID, Gid: cfg.User.GID}
			}
			cmd.SysProcAttr = attr
		}),
	}
	if xa := os.Getenv("XAUTHORITY"); xa != "" {
		xa, err = xauthorityFor(xa, dataDir, cfg.User)
		if err != nil {
			os.RemoveAll(dataDir)
			return nil, err
		}
		opts = append(opts, chromedp.Env("XAUTHORITY="+xa))
	}
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	browserCtx, browserCancel := chromedp.NewContext(allocCtx)
	b := &Browser{cfg: cfg, dataDir: dataDir, allocCancel: allocCancel, browserCtx: browserCtx, browserCancel: browserCancel}

	// The first Run starts the browser; its context must live as long as
	// the browser, so ctx bounds it from outside.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(browserCtx) }()
	select {
	case err = <-started:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("chromium: start %s: %w", cfg.Exec, err)
	}
	t := chromedp.FromContext(browserCtx).Target
	first := &tab{id: b.newTabID(), target: t.TargetID, ctx: browserCtx}
	b.tabs, b.active = []*tab{first}, first
	if err := b.startPolicy(ctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("chromium: %w", err)
	}
	return b, nil
}

// Close stops the browser and removes its profile. The driver is unusable
// afterwards.
func (b *Browser) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	ctx, cancel := context.WithTimeout(b.browserCtx, 5*time.Second)
	err := chromedp.Cancel(ctx)
	cancel()
	b.browserCancel()
	b.allocCancel()
	b.wg.Wait()
	if rerr := os.RemoveAll(b.dataDir); rerr != nil && err == nil {
		err = rerr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, chromedp.ErrInvalidContext) {
		err = nil
	}
	return err
}

// xauthorityFor returns the X cookie file the browser can read: agentd's
// own, or for another user a private copy in its profile (agentd's file is
// agentd's alone, 0600).
func xauthorityFor(path, dataDir string, u *Account) (string, error) {
	if u == nil {
		return path, nil
	}
	cookie, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("chromium: X cookie: %w", err)
	}
	copyPath := filepath.Join(dataDir, "Xauthority")
	if err := os.WriteFile(copyPath, cookie, 0o600); err != nil {
		return "", fmt.Errorf("chromium: X cookie: %w", err)
	}
	if err := os.Chown(copyPath, int(u.UID), int(u.GID)); err != nil {
		return "", fmt.Errorf("chromium: X cookie: %w", err)
	}
	return copyPath, nil
}

func (b *Browser) newTabID() string {
	b.nextTab++
	return "tab-" + strconv.Itoa(b.nextTab)
}

// browserSession is the browser-wide protocol session.
func (b *Browser) browserSession() cdp.Session { return chromedp.FromContext(b.browserCtx).Browser }

// pageTargets lists the browser's page targets.
func (b *Browser) pageTargets(ctx context.Context) ([]*target.Info, error) {
	res, err := cdp.Call(ctx, b.browserSession(), target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return nil, fmt.Errorf("list targets: %w", err)
	}
	var out []*target.Info
	for _, ti := range res.TargetInfos {
		if ti.Type == "page" {
			out = append(out, ti)
		}
	}
	return out, nil
}

// syncTabs brings the tab list in line with the browser's page targets: a
// page the browser opened itself (a pop-up) becomes a tab, a closed one
// goes. It returns the targets' infos by id.
func (b *Browser) syncTabs(ctx context.Context) (map[target.ID]*target.Info, error) {
	infos, err := b.pageTargets(ctx)
	if err != nil {
		return nil, err
	}
	byID := make(map[target.ID]*target.Info, len(infos))
	for _, ti := range infos {
		byID[ti.TargetID] = ti
	}
	kept := b.tabs[:0]
	known := map[target.ID]bool{}
	for _, t := range b.tabs {
		if byID[t.target] != nil {
			kept = append(kept, t)
			known[t.target] = true
		} else if t.cancel != nil {
			t.cancel()
		}
	}
	b.tabs = kept
	for _, ti := range infos {
		if known[ti.TargetID] {
			continue
		}
		t, err := b.attach(ctx, ti.TargetID)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			// Gone meanwhile, or not yet attachable: the next call
			// lists it again.
			delete(byID, ti.TargetID)
			continue
		}
		b.tabs = append(b.tabs, t)
	}
	if b.active == nil || byID[b.active.target] == nil {
		b.active = nil
		if len(b.tabs) > 0 {
			b.active = b.tabs[len(b.tabs)-1]
		}
		b.refs.reset()
	}
	return byID, nil
}

// attach makes a tab of an existing page target. The first Run on a
// chromedp context attaches its target and keeps that Run's context as the
// target's for good: it must be the tab's own context, never a call's, or
// the tab stops receiving its messages when the call ends; its calls then
// hang, and once its queue is full so does every other tab (what a pop-up
// used to do).
func (b *Browser) attach(ctx context.Context, id target.ID) (*tab, error) {
	tctx, cancel := chromedp.NewContext(b.browserCtx, chromedp.WithTargetID(id))
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(tctx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		cancel()
		<-done
		return nil, ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("attach to tab: %w", err)
	}
	return &tab{id: b.newTabID(), target: id, ctx: tctx, cancel: cancel}, nil
}

// State reports the tabs, V1: titles are cut by the toolset.
func (b *Browser) State(ctx context.Context) (browser.State, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	byID, err := b.syncTabs(ctx)
	if err != nil {
		return browser.State{}, err
	}
	st := browser.State{Version: browser.StateV1, Tabs: make([]browser.Tab, 0, len(b.tabs))}
	for _, t := range b.tabs {
		ti := byID[t.target]
		st.Tabs = append(st.Tabs, browser.Tab{ID: t.id, Title: ti.Title, URL: reportableURL(ti.URL), Active: t == b.active})
	}
	return st, nil
}

// reportableURL keeps a URL the toolset can reduce to an origin; one it
// could not parse becomes its scheme, or nothing.
func reportableURL(raw string) string {
	if _, err := browser.ReportedURL(raw); err == nil {
		return raw
	}
	for i, c := range raw {
		if c == ':' {
			return raw[:i+1]
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			break
		}
	}
	return ""
}

// tabFor finds the tab a call names (nil: the active one). Callers hold mu.
func (b *Browser) tabFor(ctx context.Context, id *string) (*tab, error) {
	if _, err := b.syncTabs(ctx); err != nil {
		return nil, err
	}
	if id == nil {
		if b.active == nil {
			return nil, browser.NewBrowserError("there is no open tab")
		}
		return b.active, nil
	}
	for _, t := range b.tabs {
		if t.id == *id {
			return t, nil
		}
	}
	return nil, browser.NewBrowserError(fmt.Sprintf("there is no tab %q: list the tabs", *id))
}

// run runs f against the tab's target with the call's context.
func run[T any](ctx context.Context, t *tab, f func(ctx context.Context, s *chromedp.Target) (T, error)) (T, error) {
	tctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	v, err := chromedp.Run(tctx, chromedp.Action[T](f))
	if err != nil && ctx.Err() != nil {
		return v, ctx.Err()
	}
	return v, err
}

// Navigate opens args.URL in the tab and waits for it to load.
func (b *Browser) Navigate(ctx context.Context, args browser.NavigateArgs) (*string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabFor(ctx, args.TabID)
	if err != nil {
		return nil, err
	}
	b.refs.reset()
	return nil, b.report(ctx, b.navigate(ctx, t, args.URL))
}

func (b *Browser) navigate(ctx context.Context, t *tab, url string) error {
	nctx, cancel := context.WithTimeout(ctx, navigationTimeout)
	defer cancel()
	_, err := run(nctx, t, func(ctx context.Context, s *chromedp.Target) (chromedp.Void, error) {
		return chromedp.Navigate(url)(ctx, s)
	})
	var le *chromedp.LoadError
	switch {
	case errors.As(err, &le):
		return browser.NewBrowserError("the page did not load: " + le.ErrorText)
	case err != nil && ctx.Err() == nil && nctx.Err() != nil:
		return browser.NewBrowserError(fmt.Sprintf("the page did not finish loading within %s", navigationTimeout))
	}
	return err
}

// NewTab opens a tab, blank or at args.URL, and makes it the active one.
func (b *Browser) NewTab(ctx context.Context, args browser.NewTabArgs) (*string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	res, err := cdp.Call(ctx, b.browserSession(), target.CreateTarget, target.CreateTargetParams{URL: "about:blank"})
	if err != nil {
		return nil, fmt.Errorf("create target: %w", err)
	}
	t, err := b.attach(ctx, res.TargetID)
	if err != nil {
		return nil, err
	}
	b.tabs = append(b.tabs, t)
	b.active = t
	b.refs.reset()
	if args.URL != nil {
		return nil, b.report(ctx, b.navigate(ctx, t, *args.URL))
	}
	_, err = run(ctx, t, func(context.Context, *chromedp.Target) (chromedp.Void, error) { return chromedp.Void{}, nil })
	return nil, b.report(ctx, err)
}

// SwitchTab makes a tab the active one and brings it to the front.
func (b *Browser) SwitchTab(ctx context.Context, args browser.SwitchTabArgs) (*string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabFor(ctx, &args.TabID)
	if err != nil {
		return nil, err
	}
	if _, err := cdp.Call(ctx, b.browserSession(), target.ActivateTarget, target.ActivateTargetParams{TargetID: t.target}); err != nil {
		return nil, fmt.Errorf("activate target: %w", err)
	}
	if _, err := run(ctx, t, func(ctx context.Context, s *chromedp.Target) (cdp.Empty, error) {
		return cdp.Call(ctx, s, page.BringToFront, cdp.Empty{})
	}); err != nil {
		return nil, err
	}
	b.active = t
	b.refs.reset()
	return nil, b.report(ctx, nil)
}

// CloseTab closes a tab; the last tab stays (a browser without tabs ends).
func (b *Browser) CloseTab(ctx context.Context, args browser.CloseTabArgs) (*string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabFor(ctx, &args.TabID)
	if err != nil {
		return nil, err
	}
	if len(b.tabs) == 1 {
		return nil, browser.NewBrowserError("this is the last tab; it stays open")
	}
	if _, err := cdp.Call(ctx, b.browserSession(), target.CloseTarget, target.CloseTargetParams{TargetID: t.target}); err != nil {
		return nil, fmt.Errorf("close target: %w", err)
	}
	b.refs.reset()
	// The browser answers before the target is gone; wait until it is
	// unlisted so the state read after this call does not show it.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		infos, err := b.pageTargets(ctx)
		if err != nil {
			return nil, err
		}
		gone := true
		for _, ti := range infos {
			gone = gone && ti.TargetID != t.target
		}
		if gone {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = b.syncTabs(ctx)
	return nil, b.report(ctx, err)
}

// pid is the browser process's id.
func (b *Browser) pid() int { return chromedp.FromContext(b.browserCtx).Browser.Process().Pid }
