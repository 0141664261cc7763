package kubernetes

import "github.com/agentd-dev/agentd/guest/backend"

// Default is the registered backend; agentctl's flags set its Options.
var Default = &Backend{}

func init() { backend.Register(Default) }
