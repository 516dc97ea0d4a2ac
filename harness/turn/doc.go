// Package turn takes an agent's turns, one small named step after another:
// the conversation opened and checked, the message appended with its head,
// the settings read, the window read back from the tail, the prompt
// composed, the model called, the answer appended, and the copy for people
// added to. Nothing of a turn stays in memory once it ends that a new
// process could not read back, so any process can take the next turn.
package turn
