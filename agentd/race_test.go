//go:build race

package agentd

// raceEnabled shrinks pixel-heavy loops: the race detector instruments every
// pixel access and makes one 1440×900 screenshot take seconds.
const raceEnabled = true
