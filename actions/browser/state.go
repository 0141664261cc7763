package browser

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// The versions of a State.
const (
	// StateLegacy is a state without observation metadata.
	StateLegacy = 0
	// StateV1 is a state with V1 observation metadata: titles are limited
	// to MaxTitleBytes.
	StateV1 = 1
)

// Limits of a reported state.
const (
	// MaxURLBytes bounds a tab's reported URL (after it is reduced to an
	// origin or a scheme, so a long page path never makes state unreadable).
	MaxURLBytes = 2048
	// MaxTitleBytes bounds a title in a V1 state; a longer one is cut on a
	// character boundary and marked TitleTruncated.
	MaxTitleBytes = 1024
)

// State is what a driver's State method reports: the browser's tabs.
type State struct {
	// Version is StateLegacy (0) or StateV1.
	Version int   `json:"version,omitempty"`
	Tabs    []Tab `json:"tabs"`
}

// Tab is one browser tab. IDs are stable and unique; Active marks the tab
// that really is active (at most one). The driver keeps credentials and
// private information out of titles and URLs; the toolset also reduces every
// URL to what the contract allows before anyone sees it.
type Tab struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	URL    string `json:"url"`
	Active bool   `json:"active"`
	// TitleTruncated says the title was cut to MaxTitleBytes (V1 only).
	TitleTruncated bool `json:"title_truncated,omitempty"`
}

// ErrInvalidState is matched (errors.Is) by the error of a state the driver
// reported that breaks the contract; it stops the run.
var ErrInvalidState = errors.New("invalid browser state")

// Clone returns a deep copy of s.
func (s State) Clone() State {
	s.Tabs = slices.Clone(s.Tabs)
	return s
}

// ActiveTab returns the active tab, or nil when no tab is active.
func (s State) ActiveTab() *Tab {
	for i := range s.Tabs {
		if s.Tabs[i].Active {
			return &s.Tabs[i]
		}
	}
	return nil
}

// normalizeState checks a driver's state and returns the copy the toolset
// reports: URLs reduced to origins (http, https), about:blank, or a scheme;
// V1 titles cut to MaxTitleBytes.
func normalizeState(s State) (State, error) {
	bad := func(format string, args ...any) (State, error) {
		return State{}, fmt.Errorf("%w: %s", ErrInvalidState, fmt.Sprintf(format, args...))
	}
	if s.Version != StateLegacy && s.Version != StateV1 {
		return bad("unknown version %d", s.Version)
	}
	out := State{Version: s.Version, Tabs: make([]Tab, 0, len(s.Tabs))}
	ids := make(map[string]bool, len(s.Tabs))
	active := 0
	for i, t := range s.Tabs {
		if !utf8.ValidString(t.ID) || !utf8.ValidString(t.Title) {
			return bad("tab %d: id or title is not valid UTF-8", i)
		}
		if ids[t.ID] {
			return bad("tab %d: duplicate id %q", i, t.ID)
		}
		ids[t.ID] = true
		if t.Active {
			active++
		}
		u, err := ReportedURL(t.URL)
		if err != nil {
			return bad("tab %d: %v", i, err)
		}
		nt := Tab{ID: t.ID, Title: t.Title, URL: u, Active: t.Active}
		if s.Version == StateV1 {
			nt.Title, nt.TitleTruncated = TruncateTitle(t.Title)
			nt.TitleTruncated = nt.TitleTruncated || t.TitleTruncated
		}
		out.Tabs = append(out.Tabs, nt)
	}
	if active > 1 {
		return bad("%d tabs are marked active", active)
	}
	return out, nil
}

// TruncateTitle cuts title to at most MaxTitleBytes of UTF-8 without
// splitting a character, and says whether it cut anything.
func TruncateTitle(title string) (string, bool) {
	if len(title) <= MaxTitleBytes {
		return title, false
	}
	cut := MaxTitleBytes
	for cut > 0 && !utf8.RuneStart(title[cut]) {
		cut--
	}
	return title[:cut], true
}

// ReportedURL reduces a tab's URL to what state may show: the origin of an
// http or https URL (scheme, host and a non-default port; no credentials,
// path, query or fragment), about:blank as it is, and only the scheme of any
// other URL ("data:", "file:"). The empty URL (a tab that has none yet) stays
// empty. A URL that does not parse, or whose reduced form is longer than
// MaxURLBytes, is an error.
func ReportedURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	if !utf8.ValidString(raw) {
		return "", errors.New("url is not valid UTF-8")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("url does not parse: %w", redactURLError(err))
	}
	scheme := strings.ToLower(u.Scheme)
	var out string
	switch {
	case scheme == "":
		return "", errors.New("url has no scheme")
	case scheme == "about" && strings.EqualFold(u.Opaque, "blank"):
		out = "about:blank"
	case scheme == "http" || scheme == "https":
		host := strings.ToLower(u.Hostname())
		if host == "" {
			return "", fmt.Errorf("%s url has no host", scheme)
		}
		out = scheme + "://" + hostPort(host, u.Port(), scheme)
	default:
		out = scheme + ":"
	}
	if len(out) > MaxURLBytes {
		return "", fmt.Errorf("reported url is %d bytes, over %d", len(out), MaxURLBytes)
	}
	return out, nil
}

// hostPort joins a host and a port, dropping the scheme's default port as
// origins do and bracketing IPv6 addresses.
func hostPort(host, port, scheme string) string {
	if port == defaultPort(scheme) {
		port = ""
	}
	if port == "" {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, port)
}

func defaultPort(scheme string) string {
	switch scheme {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	case "ftp":
		return "21"
	}
	return ""
}

// redactURLError keeps a URL parse error's reason but not the URL, which
// may hold credentials or private paths.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
