package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Phase says when consent is asked.
type Phase string

// PhaseBeforeRead is the phase of a consent asked for a member listed in
// confirm_reads, before anything of the page is read; its State is nil.
const PhaseBeforeRead Phase = "before_read"

// ConsentRequest is what Confirm is asked about. Every callback receives its
// own deep copy: changing it changes neither the validated call nor what
// another callback sees.
type ConsentRequest struct {
	// Phase is PhaseBeforeRead for a confirm_reads consent and empty for an
	// action.
	Phase  Phase
	Member Member
	// Arguments are the call's validated arguments (one of the *Args types).
	Arguments Arguments
	// State is the state observed before the action: a record of an earlier
	// observation that locks neither the document nor the focused control.
	// A driver whose consent binds to a target re-checks it when it acts.
	// State is nil in PhaseBeforeRead.
	State  *State
	CallID string
}

// URLPolicyRequest is what the URL policy is asked about: the same as a
// ConsentRequest for navigate or new_tab, plus the requested URL, parsed.
type URLPolicyRequest struct {
	Member    Member
	Arguments Arguments
	State     *State
	CallID    string
	// URL is the requested URL. Compare its scheme, host name and port
	// with the task's allowed destinations; never a string prefix
	// (https://example.com.evil.test is not https://example.com).
	URL *url.URL
}

// ConfirmFunc approves one browser call. Only the value true of type bool
// approves: false, nil, the string "true", 1 or any other value refuses (the
// model is told). An error or a panic stops the run (ErrConsentFailed). It
// receives the run's context and should return when that is done.
type ConfirmFunc func(ctx context.Context, req ConsentRequest) (any, error)

// URLPolicyFunc approves the URL of a navigate or new_tab call before
// confirm is asked, under the same rules as ConfirmFunc. It checks the
// requested navigation only: it cannot stop redirects, pop-ups, page
// scripts or embedded resources, so apply a policy in the browser too
// (agentd's Chromium: browserrpc.Driver.SetAllowedOrigins) or in its
// environment.
type URLPolicyFunc func(ctx context.Context, req URLPolicyRequest) (any, error)

// ask runs one consent callback and decides, failing closed: approved only
// on exactly true. A callback error or panic is returned as an error.
func ask(f func() (any, error)) (approved bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			approved, err = false, fmt.Errorf("%w: the callback panicked: %v", ErrConsentFailed, p)
		}
	}()
	v, err := f()
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrConsentFailed, err)
	}
	return v == true, nil
}

// AllowOrigins returns a URL policy that approves exactly the URLs whose
// scheme, host name and port equal those of one of origins ("https://
// example.com", "http://127.0.0.1:8080"). Default ports count as given
// (https://example.com:443 is https://example.com); host names compare
// case-insensitively and whole, so neither a longer host
// (example.com.evil.test), a subdomain (www.example.com), a trailing dot
// nor credentials that look like a host (https://example.com@evil.test) get
// through. An origin with a path, query, fragment or credentials is an
// error.
func AllowOrigins(origins ...string) (URLPolicyFunc, error) {
	set, err := ParseOrigins(origins...)
	if err != nil {
		return nil, fmt.Errorf("AllowOrigins: %w", err)
	}
	return func(_ context.Context, req URLPolicyRequest) (any, error) {
		return set.Allows(req.URL), nil
	}, nil
}

// OriginSet is a set of allowed origins, compared as AllowOrigins does. A
// browser driver that enforces the policy where the browser loads (agentd's
// Chromium) uses the same comparison as the URL policy.
type OriginSet struct {
	allowed map[origin]bool
}

// ParseOrigins parses origins (scheme://host[:port] each, at least one)
// into a set.
func ParseOrigins(origins ...string) (OriginSet, error) {
	if len(origins) == 0 {
		return OriginSet{}, errors.New("no origins given")
	}
	allowed := make(map[origin]bool, len(origins))
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil {
			return OriginSet{}, fmt.Errorf("%q: %w", o, redactURLError(err))
		}
		if u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") ||
			u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
			return OriginSet{}, fmt.Errorf("%q is not an origin (scheme://host[:port])", o)
		}
		allowed[originOf(u)] = true
	}
	return OriginSet{allowed: allowed}, nil
}

// Allows reports whether u's origin is in the set.
func (s OriginSet) Allows(u *url.URL) bool {
	return u != nil && u.Host != "" && s.allowed[originOf(u)]
}

type origin struct {
	scheme, host, port string
}

func originOf(u *url.URL) origin {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = defaultPort(scheme)
	}
	return origin{scheme: scheme, host: strings.ToLower(u.Hostname()), port: port}
}

// Summary describes the request's call for a person who is asked about it:
// the member and its arguments as JSON, except that typed text and a
// script's source are shown by their length only, as the computer tool's
// type action is ("type 12 chars"): they may hold a password or other
// secret that must not appear on a terminal or in its scrollback.
func (r ConsentRequest) Summary() string {
	var hidden string
	var args any = r.Arguments
	switch a := r.Arguments.(type) {
	case TypeArgs:
		hidden = fmt.Sprintf("%d chars", utf8.RuneCountInString(a.Text))
		args = struct {
			Target *string `json:"target"`
			TabID  *string `json:"tab_id"`
		}{a.Target, a.TabID}
	case RunScriptArgs:
		hidden = fmt.Sprintf("a script of %d chars", utf8.RuneCountInString(a.Source))
		args = struct {
			TabID     *string `json:"tab_id"`
			TimeoutMS int64   `json:"timeout_ms"`
		}{a.TabID, a.TimeoutMS}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		raw = []byte("{}")
	}
	if hidden != "" {
		return fmt.Sprintf("%s %s %s", r.Member, hidden, raw)
	}
	return fmt.Sprintf("%s %s", r.Member, raw)
}

// Where names, for a person who is asked about the call, the page it acts
// on: the active tab's title and URL, or "the browser" when the state shows
// no active tab (or there is no state, before a read).
func (r ConsentRequest) Where() string {
	if r.State == nil {
		return "the browser"
	}
	if t := r.State.ActiveTab(); t != nil {
		return fmt.Sprintf("%q (%s)", t.Title, t.URL)
	}
	return "the browser"
}
