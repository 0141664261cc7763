//go:build !linux && !darwin

package runner

// isTerminal is false where the toolset cannot tell: approvals then fail
// closed instead of prompting no one.
func isTerminal(uintptr) bool { return false }

// discardTypeahead is never needed where isTerminal is always false.
func discardTypeahead(uintptr) {}
