/*
Package gcs keeps conversations in a Google Cloud Storage bucket, an object
per event: the store behind lnk-gcs. Any process on any machine that can
reach the bucket can take an agent's next turn, with no database to run.
It uses cloud.google.com/go/storage.

# The objects

Under the bucket's prefix (which ends in "/" or is empty), each agent's
objects sit under its key. Part of the format:

	<prefix><agent>/events/<thread>/<18 digits: 999999999999999999 - seq>.<seq>   the event, the exact bytes appended
	<prefix><agent>/leases/<thread>                                             no bytes; metadata holder, token, ttl_ms, last
	<prefix><agent>/meta/<thread>/<name>                                        a side datum

An agent or thread key is escaped to one path segment: a byte outside
[A-Za-z0-9._-] is %XX (upper-case hex), so a key holding "/" or bytes that
are not UTF-8 still names one folder; '%' is such a byte, so two keys never
name one folder (a thread folder's name holding '~' is %7E). A seq is at most 18 digits, so the
event names of a thread have one width and their byte order, the order a
bucket lists in, is the seqs' order backwards: the first object listed is
the last event. The seq after the dot is for people reading the bucket.

# Append only if free and the next

An event is written only if its name is not taken (ifGenerationMatch=0,
storage.Conditions{DoesNotExist: true}), which is all "only if free" needs.
A refused write reads what is there: its own bytes (a write sent again
after its answer was lost, which the client library does by itself for a
conditional write) is success; other bytes are store.ErrSeqTaken. "The
next" is that seq-1 is there: events are never deleted, so once seen it
stays, and a Conversation remembers the highest seq it has seen, so an
append within a turn asks only for its own write.

Last starts from the highest seq the Conversation has seen and asks for
the next event's object: missing, the seen seq is the last, one small
request whatever the conversation's length. Found, it asks for the one
after, up to four times. With nothing seen, or more written since, it lists
the thread's events with at most one result (the first name is the last
seq), ending before the highest seq seen (EndOffset). What is seen is
the Driver's, shared by every Conversation of the thread it opens (the
plugin program opens one for each call), for at most 4,096 threads at
once. The lease object
keeps the highest seq its last writer had seen ("last"), and reading the
lease raises what a Conversation has seen to it, so a turn that opens the
conversation afresh, takes the lease and asks for Last usually makes one
request for it. A missing object's metadata is one of Cloud Storage's
cheaper operations; a listing is one of its dearest. All of this holds
because events are never removed, so this store has no Forget
(store.Forgetter): a conversation forgotten and begun again would be
taken by another process for the longer one it remembers.

# The lease

The lease is an object of no bytes whose metadata holds the holder, the
token and the time to live; it is replaced only if it is still the
generation read (ifGenerationMatch), or made only if absent, so two takers
never both win. A release empties the holder and keeps the token, so a token
only grows. Each take, renewal or release makes a new generation, which is
what a watcher times a lease's running out by, on its own clock.

An append carrying a token reads the lease and checks the token before it
writes. A bucket has no transaction over two objects, so this is the one
place this store is weaker than a database: a holder that stops between
that read and its write, for longer than the lease's time to live, while
another takes the lease and has not yet written that seq, lands one event
with its stale token. store.HoldLease narrows that further, refusing any
append once its own clock says the lease may have run out.

# Durability

A write returns once Cloud Storage has the object; there is nothing torn
to repair, since an object is whole or absent.
*/
package gcs
