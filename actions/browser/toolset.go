package browser

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentd-dev/agentd/internal/onerun"
)

// BrowserToolset offers a driver's browser methods to the model as function
// tools and runs the model's calls under the contract: strict arguments,
// consent that fails closed, validated results and state. Make it with New.
// It never closes the driver or the browser.
type BrowserToolset struct {
	driver       Driver
	enabled      []*memberSpec // the toolset's order
	enabledSet   map[Member]bool
	confirmReads map[Member]bool
	confirm      ConfirmFunc
	urlPolicy    URLPolicyFunc

	gate onerun.Gate
}

// Option configures New.
type Option func(*config)

type config struct {
	members, additional memberList
	confirmReads        []Member
	confirm             ConfirmFunc
	urlPolicy           URLPolicyFunc
	errs                []error
}

// memberList is a selection of members that its option may give only once.
type memberList struct {
	names []Member
	given bool
}

// give records the selection an option gives; giving it again is an error.
func (c *config) give(l *memberList, option string, names []Member) {
	if l.given {
		c.errs = append(c.errs, fmt.Errorf("%s given twice", option))
	}
	*l = memberList{names: names, given: true}
}

// WithMembers offers exactly these members, when the driver implements
// them; none at all when called with no names. Names must be unique and
// predefined; list_tabs needs only State. Include the defaults you still
// need (read_page, screenshot) when you select opt-in members this way. Not
// with WithAdditionalMembers. The selection is copied.
func WithMembers(members ...Member) Option {
	members = slices.Clone(members)
	return func(c *config) { c.give(&c.members, "WithMembers", members) }
}

// WithAdditionalMembers keeps the implemented default members and adds
// these (typically opt-in ones), which the driver must implement. Not with
// WithMembers. The selection is copied.
func WithAdditionalMembers(members ...Member) Option {
	members = slices.Clone(members)
	return func(c *config) { c.give(&c.additional, "WithAdditionalMembers", members) }
}

// WithConfirm sets the consent callback; it is required when any enabled
// member changes state or reads diagnostics, and for WithConfirmReads.
func WithConfirm(f ConfirmFunc) Option { return func(c *config) { c.confirm = f } }

// WithURLPolicy sets the URL policy; it is required when navigate or
// new_tab is enabled, and is asked before confirm.
func WithURLPolicy(f URLPolicyFunc) Option { return func(c *config) { c.urlPolicy = f } }

// WithConfirmReads asks confirm (phase before_read, no state) before these
// enabled read members read anything: read_page, get_page_text, find,
// wait_for, screenshot, zoom, list_tabs, read_page_scoped. A refusal
// returns a fixed refusal with no page content and no state.
func WithConfirmReads(members ...Member) Option {
	members = slices.Clone(members)
	return func(c *config) { c.confirmReads = append(c.confirmReads, members...) }
}

// New returns a toolset over d. By default it offers the 18 default members
// that d implements (list_tabs always, derived from State); the options
// narrow or extend that. Errors say what is wrong with the configuration.
func New(d Driver, opts ...Option) (*BrowserToolset, error) {
	if d == nil {
		return nil, errors.New("browser: New: nil driver")
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	fail := func(format string, args ...any) (*BrowserToolset, error) {
		return nil, fmt.Errorf("browser: New: "+format, args...)
	}
	if len(c.errs) > 0 {
		return fail("%w", errors.Join(c.errs...))
	}
	if c.members.given && c.additional.given {
		return fail("members and additional members cannot be combined")
	}
	enabled := map[Member]bool{}
	if c.members.given {
		if err := checkNames("members", c.members.names, d); err != nil {
			return fail("%w", err)
		}
		for _, m := range c.members.names {
			enabled[m] = true
		}
	} else {
		for _, s := range specs {
			if s.group == groupDefault && s.implements(d) {
				enabled[s.name] = true
			}
		}
		if err := checkNames("additional members", c.additional.names, d); err != nil {
			return fail("%w", err)
		}
		for _, m := range c.additional.names {
			enabled[m] = true
		}
	}
	t := &BrowserToolset{driver: d, enabled: enabledOrder(enabled), enabledSet: enabled,
		confirmReads: map[Member]bool{}, confirm: c.confirm, urlPolicy: c.urlPolicy}

	for _, m := range c.confirmReads {
		s, ok := specByName[m]
		switch {
		case !ok:
			return fail("confirm reads: %q is not a browser member", m)
		case t.confirmReads[m]:
			return fail("confirm reads: %q is listed twice", m)
		case !s.read():
			return fail("confirm reads: %q is not a read member (it always needs confirm)", m)
		case !enabled[m]:
			return fail("confirm reads: %q is not enabled", m)
		}
		t.confirmReads[m] = true
	}
	var needConfirm, needPolicy []string
	for _, s := range t.enabled {
		if s.confirm {
			needConfirm = append(needConfirm, string(s.name))
		}
		if s.urlPolicy {
			needPolicy = append(needPolicy, string(s.name))
		}
	}
	if c.confirm == nil && (len(needConfirm) > 0 || len(t.confirmReads) > 0) {
		return fail("a confirm callback is required for %s", orConfirmReads(needConfirm))
	}
	if c.urlPolicy == nil && len(needPolicy) > 0 {
		return fail("a URL policy is required when %s is enabled", strings.Join(needPolicy, " and "))
	}
	return t, nil
}

func orConfirmReads(members []string) string {
	if len(members) == 0 {
		return "confirm reads"
	}
	return strings.Join(members, ", ")
}

// checkNames checks a member selection: unique, predefined, implemented.
func checkNames(what string, names []Member, d Driver) error {
	seen := map[Member]bool{}
	for _, m := range names {
		s, ok := specByName[m]
		switch {
		case !ok:
			return fmt.Errorf("%s: %q is not a browser member", what, m)
		case seen[m]:
			return fmt.Errorf("%s: %q is listed twice", what, m)
		case !s.implements(d):
			return fmt.Errorf("%s: the driver does not implement %q", what, m)
		}
		seen[m] = true
	}
	return nil
}

// Members returns the enabled members in the toolset's order (the caller's
// own slice).
func (t *BrowserToolset) Members() []Member {
	out := make([]Member, len(t.enabled))
	for i, s := range t.enabled {
		out[i] = s.name
	}
	return out
}

// Claims reports whether a function call named name is this toolset's: the
// name of an enabled member. Calls of disabled members are not claimed (an
// ordinary function may use such a name); given to Prepare anyway, they are
// refused.
func (t *BrowserToolset) Claims(name string) bool { return t.enabledSet[Member(name)] }

// Status is a toolset's lifecycle state.
type Status string

// The states of a toolset.
const (
	// StatusOpen accepts batches.
	StatusOpen Status = "open"
	// StatusDraining: closed, but a batch may still have effects; wait for
	// it to return before handing the browser on.
	StatusDraining Status = "draining"
	// StatusClosed: closed and nothing is running.
	StatusClosed Status = "closed"
)

// Status reports whether the toolset is open, draining or closed.
func (t *BrowserToolset) Status() Status { return Status(t.gate.State()) }

// Close refuses new batches. It neither waits for nor cancels a running one
// (cancel its context for that), so a driver callback may call it, and it
// never closes the browser. It always returns nil.
func (t *BrowserToolset) Close() error {
	t.gate.Close()
	return nil
}
