package computer

import (
	"context"
	"errors"
	"time"
)

// ErrTakenOver is matched (errors.Is) by a driver's error when a person
// holds the desktop: the step was refused and did nothing, and it is not
// queued. A driver that can report it implements Overseen.
var ErrTakenOver = errors.New("a person holds the desktop")

// Overseen is a Driver whose desktop a person can take over.
type Overseen interface {
	// AwaitHandback returns once no person holds the desktop, with what
	// people did since the last AwaitHandback.
	AwaitHandback(ctx context.Context) (Handback, error)
}

// Watched is an Overseen driver that is told of each take over as it
// happens, whatever the run is doing: a run waiting at a question about
// an action withdraws it, since the screenshot it refers to is out of date.
type Watched interface {
	Overseen
	// Takeovers counts the take overs the driver was told of, and returns
	// a channel closed at the next one.
	Takeovers() (n uint64, next <-chan struct{})
}

// Handback is what people did while they held the desktop (the JSON is the
// run record's, where it is part of a take over event).
type Handback struct {
	// Leases counts the take overs it covers (0: none since the last
	// AwaitHandback).
	Leases int `json:"leases,omitempty"`
	// By names who held the desktop.
	By []string `json:"by,omitempty"`
	// Actions summarise what they did, in screen pixels, typed text by its
	// length only; More counts the actions left out.
	Actions []string `json:"actions,omitempty"`
	More    int      `json:"more,omitempty"`
	// Notes are what they wrote for the model when they handed back.
	Notes []string `json:"notes,omitempty"`
	// Orphaned: a person's connection went away while holding the desktop.
	Orphaned bool      `json:"orphaned,omitempty"`
	Taken    time.Time `json:"taken,omitzero"`
	Returned time.Time `json:"returned,omitzero"`
}
