/*
Package sqlite keeps every conversation of an agent in one SQLite file,
chats/events.sqlite, so they move with the agent: the store behind
lnk-sqlite. It uses modernc.org/sqlite, SQLite translated to Go, so no cgo.

# The bytes on disk

One SQLite database (format 3) with three tables, each WITHOUT ROWID so a
row lives in its key's b-tree:

	events (thread TEXT, seq INTEGER, event TEXT, PRIMARY KEY (thread, seq))
	leases (thread TEXT PRIMARY KEY, holder TEXT, token INTEGER, gen INTEGER, ttl_ms INTEGER)
	meta   (thread TEXT, name TEXT, data BLOB, PRIMARY KEY (thread, name))

An event is kept as the exact bytes appended, one JSON object, so
`sqlite3 chats/events.sqlite "select event from events where thread='x' order by seq"`
prints a conversation as its log would hold it. The schema's version is
PRAGMA user_version, part of the format (SchemaVersion).

# Durability and locking

The journal is WAL with synchronous=FULL: a commit returns once its frames
are fsynced into events.sqlite-wal, one fsync a write, and readers never
wait for the writer. WAL needs the readers and the writer on one machine
(shared memory in events.sqlite-shm), which is what a local file is for; the
last connection to close checkpoints the WAL into the file and removes it,
so a stopped agent is the one file. Every write is one transaction begun
IMMEDIATE: it takes the file's write lock first, then reads what it checks
(the lease, the last seq, the bytes of a taken seq) and writes, so two
processes on one file never write a seq twice. A writer waits for the lock
up to BusyTimeout.

What is torn is SQLite's to repair: a transaction cut short is rolled back
from the WAL the next time the file is opened, and a commit that returned
is there.
*/
package sqlite
