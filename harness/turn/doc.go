// Package turn takes an agent's turns. A turn is one message answered: it
// holds the message's conversation alone in the process (and, through a
// lease or the folder's lock, across processes), writes every event in the
// order the model saw them, and lets the conversation go. Nothing of a
// turn stays in memory once it ends that a new process could not read
// back, so any process can take the next turn.
//
// Its steps, in order (Runner.Message, then turn.steps):
//
//  1. The settings are read, and the turn's whole time set (the spec's, else
//     DefaultTimeout).
//  2. Open (open.go): the conversation is opened and held, and checked to
//     hold this thread; or taken as its last turn here left it.
//  3. A message taken before (repeat.go, told.go): the id index is caught
//     up, an answer a dead process never told is handed over, and a
//     message sent again is told its answer again, or its turn goes on.
//  4. Append (append.go): the message is appended with its head.
//  5. The tools the turn offers are begun, narrowed by the message.
//  6. Compose (compose.go): the prompt's sections are read from the home.
//  7. Read the window (window.go): sized for the model (call.go), read back
//     from the tail to its latest checkpoint.
//  8. Rounds (rounds.go): the model is called (call.go) and its answer
//     appended; the calls it makes run at once, each result appended; the
//     messages that came meanwhile steer the turn (steer.go); between
//     rounds the window is kept within its room (room.go); a turn asked to
//     end answers with what it has (end.go).
//  9. The copy for people is added to (copy.go).
//  10. The answer is given; a summary due after it is asked for and
//     appended (summary.go); the conversation is let go.
//
// What is a decision of its own lives in a package named for it:
// idempotency (the id index, the told record, a message sent again), warm
// (what a turn keeps for the conversation's next turn, behind the few
// calls of warm.go: without it, the same turn), instructions (the settings
// and the prompt's sections read from the home, and their cache), chatcopy
// (the copy for people), running (the turns running in the process, and
// the messages that steer one or end it), summary (when a conversation is
// summarized and what is asked), window (where the window starts), prompt
// (the prompt's bytes), model (the providers), facts (what is known of a
// model) and tools (the tools, and where a narrowing is kept). A fork of a
// conversation (fork.go) is a new conversation written from the old one's
// events, then a turn.
package turn
