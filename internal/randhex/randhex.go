// Package randhex makes the host side's random names and secrets: agentd
// tokens, guest names, process markers.
package randhex

import (
	"crypto/rand"
	"encoding/hex"
)

// String returns n random bytes from crypto/rand in hex (2n characters).
// crypto/rand.Read does not fail: the runtime ends the program if the
// system's source is broken.
func String(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
