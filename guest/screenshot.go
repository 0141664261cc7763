package guest

import "github.com/agentd-dev/agentd/scaling"

// Screenshot is one PNG image of the guest's screen and how it was made.
type Screenshot struct {
	PNG       []byte
	Transform scaling.Transform
}
