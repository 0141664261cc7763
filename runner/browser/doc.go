// Package browser offers the browser toolset (package actions/browser) to
// the OpenAI Responses API: each enabled member as a strict function tool
// (Tools, FunctionTool), a response's function calls as the toolset's calls
// (CallOf), its outputs as function_call_output items (OutputParam,
// InputItems), and Tool, the whole toolset as one runner.Tool whose browser
// calls of a response run as one batch. It is host code: the driver
// contract it builds on links no model API, so agentd does not link this.
package browser
