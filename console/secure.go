package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"
)

// cookieName is the console's session cookie.
const cookieName = "agentd_console"

// csp allows the page's own scripts, styles and images and nothing else:
// no inline script, no other origin, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// auth holds the one-time secret and the cookie it is exchanged for.
type auth struct {
	secret string
	cookie string

	mu   sync.Mutex
	used bool
}

func newAuth(secret, cookie string) auth { return auth{secret: secret, cookie: cookie} }

// same compares in constant time, whatever the lengths.
func same(a, b string) bool {
	da, db := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(da[:], db[:]) == 1
}

// exchange spends the secret: true the first time it is given right.
func (a *auth) exchange(given string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used || !same(given, a.secret) {
		return false
	}
	a.used = true
	return true
}

// secure wraps every route: the Host must be the console's own address
// (a rebound DNS name is refused), the path must be under the console's
// random prefix (s.base, the cookie's Path), a request from a page must
// come from the console's own origin, and everything but the login needs
// the cookie. No CORS header is ever sent. next gets the path without the
// prefix.
//
// Cookies ignore ports: a cookie of Path=/ on 127.0.0.1 would go to every
// other server on 127.0.0.1 the browser visits, which could replay it. Its
// Path is the prefix, 128 random bits no other server's page is ever at.
func (s *Server) secure(next http.Handler) http.Handler {
	origin := "http://" + s.host
	next = http.StripPrefix(s.base, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if r.Host != s.host {
			s.refuse(w, r, http.StatusMisdirectedRequest, "wrong Host: the console answers to "+s.host+" only")
			return
		}
		path, ok := strings.CutPrefix(r.URL.Path, s.base)
		if !ok || !strings.HasPrefix(path, "/") {
			s.refuse(w, r, http.StatusNotFound, "not found: open the URL agentctl printed")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && o != origin {
			s.refuse(w, r, http.StatusForbidden, "requests from other origins are refused")
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			s.refuse(w, r, http.StatusForbidden, "requests from other sites are refused")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// The only thing the page sends is an answer, and only from
			// the page itself: its own Origin must be there.
			if r.Method != http.MethodPost || !strings.HasPrefix(path, "/api/questions/") {
				s.refuse(w, r, http.StatusMethodNotAllowed, "the console only takes answers to its questions")
				return
			}
			if r.Header.Get("Origin") != origin {
				s.refuse(w, r, http.StatusForbidden, "an answer must come from the console's own page")
				return
			}
		}
		if path == "/login" {
			s.login(w, r)
			return
		}
		c, err := r.Cookie(cookieName)
		if err != nil || !same(c.Value, s.auth.cookie) {
			s.refuse(w, r, http.StatusUnauthorized, "not signed in: open the URL agentctl printed (it works once)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// login exchanges the one-time secret for the cookie, scoped to the
// console's prefix, then shows the page.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.auth.exchange(r.URL.Query().Get("secret")) {
		s.refuse(w, r, http.StatusForbidden, "this sign-in link is wrong or was already used: start the console again for a new one")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.auth.cookie, Path: s.base,
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	// The page's address no longer carries the secret.
	http.Redirect(w, r, s.base+"/", http.StatusSeeOther)
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.cfg.Logf("console: refused %s %s: %s", r.Method, r.URL.Path, msg)
	http.Error(w, msg, code)
}
