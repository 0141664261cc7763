// Package chromium is the guest's browser driver: a Chromium (Debian's
// chromium) that agentd starts on the guest's display and drives over the
// Chrome DevTools protocol, implementing the browser package's driver roles.
//
// Security of the browser itself:
//   - Chromium keeps its sandbox. It is never started with --no-sandbox; it
//     runs as the desktop user (Config.User when agentd runs as root, as
//     Chromium refuses root with its sandbox on).
//   - DevTools is reached only through --remote-debugging-pipe: the protocol
//     runs over two file descriptors inherited by the browser process, so
//     there is no port and no socket that another process of the guest (a
//     page's own code, another user, the model through the desktop) could
//     connect to. A loopback port would be open to every local process.
//   - Loads are limited to the allowed origins once SetAllowedOrigins is
//     given them, for every request of every tab, pop-up and frame, and
//     downloads are denied (policy.go).
//
// Reads come from the accessibility tree, its roles mapped to the browser
// contract's seven. Refs are valid for one document generation of one tab:
// switching, opening or closing a tab, or a new document in the tab,
// invalidates them all, and every action re-checks its ref against the
// current document before it acts (a stale or replaced control is a
// *browser.BrowserError and nothing is done).
package chromium
