/*
Package pebble keeps every conversation of an agent in one pebble database
(github.com/cockroachdb/pebble/v2, an LSM key-value store), the folder
chats/events.pebble: the store behind lnk-pebble.

# The keys

Keys are ordered by conversation, then seq, so a conversation's events are
one contiguous range and its tail is the range's end. Part of the format:

	'e' thread 0x00 seq (8 bytes, big-endian)  → the event, the exact bytes appended
	'l' thread                                 → the lease: uvarint token, gen, ttl_ms, then the holder
	'm' thread 0x00 name                       → a side datum

A thread key holds no control byte (rules.Thread), so 0x00 ends it and a
thread's range never takes in another's.

# Append only if free

Pebble has no compare-and-swap: a write never fails because a key is
there. So each conversation has a lock in the Driver, taken around reading
what an append checks (the lease, the last seq, a taken seq's bytes) and
writing it; leases and side data take the same lock. The lock is in this
process: pebble itself locks its folder (the LOCK file), so only one process
opens a database at a time, and the lock sees every writer.

# Durability

Every write is committed with pebble.Sync: it returns once pebble's WAL is
fsynced. What is torn is pebble's to repair: a WAL record cut short is
dropped when the database is opened, and what a synced write returned for
is there.
*/
package pebble
