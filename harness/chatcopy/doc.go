// Package chatcopy keeps a conversation's copy for people, chat.md: what
// was said up to the agent's last answer, the messages and the agent's
// answers, never a tool's call or its answer, never a message while it is
// being answered. Each answer adds what was said since the one before to
// its end, closed by a mark naming the answer's seq; when the copy does not
// end with the mark of the answer before, it is made again from every event
// (Remake).
//
// The copy is derived: the events are the truth. It is kept beside a log
// only. A compact conversation keeps none (it would take most of what
// compression saves), nor does one a driver keeps, whose folder holds only
// its marker and what is not an event; a conversation says so with
// KeepsNoCopy. lnk agent chat show and the harness's GET of a conversation
// make such a copy from the events (Write), and Link Memory makes its own.
package chatcopy
