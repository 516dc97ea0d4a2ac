// Package running keeps the turns running in a process, one at a time for
// each conversation, and what reaches a turn from outside while it runs: a
// message sent to the conversation, which steers the turn rather than
// waiting for a turn of its own, and a request to end it.
//
// Turns is the conversations' locks. A turn takes its conversation's
// (Lock) and gets its Inbox in the same step, so a message that finds the
// conversation held is offered to the holder's inbox, and no message falls
// between two turns unseen. An entry lives only while a turn holds or
// waits for it, so an idle agent holds nothing here.
//
// An Inbox is one running turn's: senders offer their messages (Offer) and
// wait for what they are told (Steer.Wait); the turn takes them (Take),
// appends them and says which answer each is told (Answered), and at its
// end tells each its answer, or hands back those it never took, to wait
// for a turn of their own (Finish). End asks the turn to end through the
// same inbox, and waits for it to let the conversation go (Gone).
//
// What a turn does with them, when a message is appended and which answer
// it is told, is the turn's: package turn says it.
package running
