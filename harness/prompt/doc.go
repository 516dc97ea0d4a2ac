// Package prompt composes what the model is sent: the system prompt from
// its sections, in the order of how often each changes, least first, and the
// conversation's events as the model's messages. Each function is pure and
// deterministic, so the same events and sections give the same bytes turn
// after turn, and the provider's cache holds.
package prompt
