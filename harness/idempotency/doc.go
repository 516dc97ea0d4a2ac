// Package idempotency keeps a conversation's messages taken once and its
// answers told once, whatever is sent again and whichever process dies.
//
// A message is never asked twice. A message whose id the conversation
// holds, however far back (the id index, Index, a hash table on disk in
// the conversation's folder, made once the conversation holds 32 events;
// a smaller one's ids are read from its events), is the message taken
// before:
//
//   - answered, its answer (the first after it that calls nothing) is told
//     again, and nothing is written;
//   - not answered, because its turn ended first (a model's 500, a process
//     killed), its turn goes on from what the conversation holds: the
//     message is not written again, the calls whose results are written
//     are not made again (Unanswered), those without one are made, and the
//     model is asked; that answer is the message's.
//
// A message with no id is one with the conversation's last message when
// that has no id either and the same sender id, connection and text
// (SentAgain): a caller that sends again what it got no answer to is told
// the answer, or has its turn go on. Only the last message counts, so the
// same words sent again later ("yes", "ok") are a new message once
// anything else was said; a sender who means the same words twice in a
// row as two messages gives them ids.
//
// An answer is told once (the told record, Told and WriteTold): the
// highest seq told is kept beside the events, and an answer a dead
// process wrote and never told is handed over by the next turn, once.
//
// The index and the told record are derived, never the truth: the events
// are. Each is written without a sync: a process's death keeps what it
// wrote; a machine that loses power may lose the index's last slots (a
// message then found nowhere is asked again) or the last answers marked
// told (handed over once more rather than never).
package idempotency
