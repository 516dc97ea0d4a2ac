// Package window decides how much of a conversation the model sees: the
// rough count of tokens, the conversation's share of the model's window,
// and where the window starts. Every function here is pure: the turn reads
// the events, this package says what to send.
package window
