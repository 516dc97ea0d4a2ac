// Package apart runs a call that goes deep into its callees' frames on a
// goroutine of its own, and waits for it.
//
// A goroutine's stack is a power of two that fits the deepest its frames
// went, and the collector shrinks it only once under a quarter of it is in
// use. A turn waits on its model's stream for seconds with under 6 KiB of
// frames in use, so a turn that once went past 8 KiB (a TLS handshake, the
// settings' JSON decoded, a dial) holds 16 KiB for the rest of its wait.
// Such calls are rare in a turn (a file read again once changed, a
// connection dialed once), so each on a goroutine of its own costs a
// goroutine's start, and the turn's stack stays at 8 KiB.
package apart
