// Package browser is the browser toolset's contract, shared by host and
// guest: the seeds' browser driver contract (docs/design.md, "The browser
// toolset") in Go, for an application that can report a page's text,
// controls and tabs instead of screenshots and coordinates, and the toolset
// that checks and runs the model's calls against a driver. It depends on no
// model API: runner/browser offers the toolset to the Responses API, and
// agentd's Chromium driver implements the contract without linking openai-go.
//
// A driver implements State and only the methods it offers, each its own
// one-method interface (Navigator, PageReader, Clicker, ...). New makes a
// BrowserToolset over it: by default the 18 default members the driver
// implements (list_tabs is derived from State); WithMembers narrows or
// selects opt-in members, WithAdditionalMembers adds them to the defaults.
//
// Toward a model each enabled member is a strict function tool
// (runner/browser's Tools). A runner hands over the function calls of one
// response that the toolset Claims; Prepare decodes and validates all of
// them before anything runs; Batch.Run executes them in order and returns
// one Output (a function_call_output) per call. The rules, in the order they apply:
//
//   - A call of a member that is not enabled, or with invalid arguments
//     (unknown or missing fields, wrong types, numbers that are not safe
//     integers, booleans where numbers belong, out-of-range values and
//     lengths), is refused before any state is read or consent asked, and
//     nothing of that response runs.
//   - A member listed in confirm_reads asks Confirm first, with phase
//     before_read and no state; a refusal returns a fixed refusal with no
//     content and no state.
//   - A member that changes state or reads diagnostics reads the state, asks
//     the URL policy (navigate, new_tab with a URL) and then Confirm. Each
//     callback gets its own copy of {member, arguments, state, call_id};
//     only the bool true approves.
//   - The driver method runs with the call's context; its result is
//     validated and copied, then the state is read again and reduced
//     (origin-only URLs, titles cut to 1,024 bytes in V1 states).
//   - A *BrowserError is shown to the model; any other error is a generic
//     failure that skips the response's remaining browser calls, as does a
//     file outcome other than completed. An invalid result or state, a
//     failed state read, a failed consent callback or the end of the context
//     stops the run (*StopError).
//
// The package has no dependency on a particular runner or browser; the
// Chromium driver inside the guest is another package's job.
package browser
