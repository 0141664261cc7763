// Package bench is `agentctl bench`: it starts its own local guest with a
// deterministic desktop and measures agentd end to end from the host —
// screenshots, input round trips, typing, settling — next to the tools that
// other computer-use stacks shell out to or link (scrot, ImageMagick import,
// xdotool, kbinani/screenshot, robotgo), all in the same run.
//
// Every figure is a distribution over many samples, reported as its median
// (p50) and 99th percentile (nearest rank). Contenders of one comparison run
// in interleaved rounds, so that a change in the machine's load affects
// them alike, and each comparison is the ratio of medians measured in the
// same run. Nothing here asserts a speed: the numbers are for people.
package bench
