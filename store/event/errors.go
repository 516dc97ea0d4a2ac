package event

import "errors"

// ErrInvalid comes when bytes are not an event: not one JSON object, a key
// of the wrong type, no seq or type, or over MaxBytes.
var ErrInvalid = errors.New("event: invalid")
