//go:build !race

package agentd

const raceEnabled = false
