package vm

import "github.com/agentd-dev/agentd/guest/backend"

func init() { backend.Register(Backend{}) }
