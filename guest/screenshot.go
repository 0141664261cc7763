package guest

import "github.com/agentd-dev/agentd/runner/computer"

// Screenshot is one PNG image of the guest's screen and how it was made.
type Screenshot = computer.Screenshot
