package runner

import (
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"
)

// RunControl steers a run while it goes: a person's text to add, and
// outputs supplied in place of function calls. Safe for use from any
// goroutine; pass it as RunOptions.Control.
type RunControl struct {
	mu    sync.Mutex
	texts []string
	// turn holds the local calls of the response being handled, by call
	// id, until each is attempted.
	turn map[string]Call
	// supplied are outputs given for function calls of the turn.
	supplied map[string]Output
}

// AppendUserText queues a person's text. It is added as a user message
// after the outputs of the turn in progress, when that turn completes; it
// does not reset the step budget. Only text is accepted: not tool outputs,
// not approvals.
func (c *RunControl) AppendUserText(text string) error {
	if text == "" || !utf8.ValidString(text) {
		return errors.New("append_user_text takes non-empty UTF-8 text")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.texts = append(c.texts, text)
	return nil
}

// SupplyOutputs answers function calls of the current turn with the given
// outputs instead of running them. Each call must be an ordinary function
// whose registration allows it (Replaceable) and that was not attempted
// yet; a computer or browser call or an MCP approval never can be. Nothing
// is supplied unless every output can be.
func (c *RunControl) SupplyOutputs(outputs map[string]Output) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, out := range outputs {
		call, ok := c.turn[id]
		if !ok {
			return fmt.Errorf("supply_outputs: %s is no call of the current turn that is still to run", id)
		}
		fc, ok := call.(*functionCall)
		if !ok {
			return fmt.Errorf("supply_outputs: call %s is not an ordinary function call", id)
		}
		if !fc.f.replaceable {
			return fmt.Errorf("supply_outputs: function %s does not allow its output to be supplied", fc.f.name)
		}
		if err := checkOutput(out); err != nil {
			return fmt.Errorf("supply_outputs: call %s: %w", id, err)
		}
	}
	if c.supplied == nil {
		c.supplied = map[string]Output{}
	}
	for id, out := range outputs {
		c.supplied[id] = out
	}
	return nil
}

// begin makes calls the current turn.
func (c *RunControl) begin(calls []Call) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turn = make(map[string]Call, len(calls))
	for _, call := range calls {
		c.turn[call.CallID()] = call
	}
	c.supplied = nil
}

// take marks a call attempted and returns the output supplied for it, if
// any.
func (c *RunControl) take(callID string) (Output, bool) {
	if c == nil {
		return Output{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.turn, callID)
	out, ok := c.supplied[callID]
	return out, ok
}

// end closes the turn and returns the queued texts.
func (c *RunControl) end() []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turn, c.supplied = nil, nil
	texts := c.texts
	c.texts = nil
	return texts
}

// pending reports whether a person's text waits to be sent.
func (c *RunControl) pending() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.texts) > 0
}
