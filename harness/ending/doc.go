// Package ending carries a request to end a turn to whichever process of
// the home runs it: the conversation's end record, the file end in its
// folder, as the seed keeps "a turn asked to end".
//
// The record says the seq of an event the running turn had written when
// the end was asked. A turn honors a record whose seq is past the event
// before its own message, and no other: a record left by a process that
// died, or written for a turn that gave its answer before it saw it, never
// ends a later turn.
//
// The process asked (Elsewhere) finds the conversation held by another
// process (its folder's flock, or its store's lease), reads its last event,
// and, while the turn is mid-way (its last event a message, a result, or
// an answer calling tools), writes the record. It then waits until it can
// hold the conversation itself: the turn has let it go. Holding it, it
// removes the record and reads the answer the turn ended with.
//
// The process running the turn watches its running turns' records
// (Watcher): one timer for all of them, armed only while a turn runs, each
// tick a read of each running turn's record. An idle process reads
// nothing and holds no timer, and a turn shorter than a tick reads nothing.
// A turn sees its record within one tick (Every) of its writing, and the
// process asked sees the turn let go within one of its own.
package ending
