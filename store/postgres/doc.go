/*
Package postgres keeps conversations in a PostgreSQL database, or a
CockroachDB one, which speaks the same protocol: the store behind
lnk-postgres. Many agents share a database, each conversation keyed by
agent and thread, so any process on any machine that reaches the database
can take an agent's next turn. It uses github.com/jackc/pgx/v5.

# The rows

Three tables, made when they are not there (CREATE TABLE IF NOT EXISTS), in
the schema the connection's search_path names. Part of the format:

	lnk_events (agent TEXT, thread TEXT, seq INT8, event BYTEA, PRIMARY KEY (agent, thread, seq))
	lnk_leases (agent TEXT, thread TEXT, holder TEXT, token INT8, ttl_ms INT8, gen INT8, PRIMARY KEY (agent, thread))
	lnk_meta   (agent TEXT, thread TEXT, name TEXT, data BYTEA, PRIMARY KEY (agent, thread, name))

An event is the exact bytes appended, kept as BYTEA rather than TEXT or
JSONB, which would refuse or rewrite bytes JSON allows (invalid UTF-8 inside
a string) and reorder keys. psql shows a conversation with

	SELECT seq, convert_from(event, 'UTF8') FROM lnk_events
	 WHERE agent = 'ada' AND thread = 'telegram-42' ORDER BY seq;

A lease row is never deleted: a release empties its holder and keeps its
token, so a token only grows, across processes and restarts.

# Append only if free and the next

An append is one transaction: it reads the lease row FOR UPDATE (so a
lease taken or released meanwhile waits for the append, and the token is
checked in the same step as the write), reads the last seq, and writes with
INSERT … ON CONFLICT DO NOTHING. The unique key decides between racing
writers; the loser finds the row there (no row inserted), and compares
bytes: the same bytes again is success, which is how a write sent again
after its answer was lost is counted as written; other bytes are
store.ErrSeqTaken. Events are deleted only by Forget, which a conversion
runs with the agent stopped, so a seq seen as the last stays there and "the
next" read before the insert cannot be undone.

A lease or a tool list written for the first time is an INSERT … ON
CONFLICT DO NOTHING too: an insert that finds a row another just made
starts its transaction again, so two first writers never both win.

# Only what CockroachDB runs too

The SQL keeps to what both engines run: CREATE TABLE IF NOT EXISTS, INT8,
BYTEA, composite primary keys, SELECT … FOR UPDATE, INSERT … ON CONFLICT
DO NOTHING and DO UPDATE SET … = excluded.…, LIMIT, and the rows affected
of a statement. Left out on purpose: advisory locks (pg_advisory_xact_lock;
CockroachDB has none that lock), the xmax system column in RETURNING to
tell an insert from an update (CockroachDB has no xmax), SERIAL or
sequences for tokens (CockroachDB's SERIAL is unique_rowid(), neither dense
nor ordered per row, and a sequence is not transactional on either engine),
UPSERT (CockroachDB's alone), PL/pgSQL and DO blocks, LISTEN/NOTIFY, and
reliance on READ COMMITTED's per-statement snapshots: CockroachDB runs
SERIALIZABLE and aborts one of two conflicting transactions with SQLSTATE
40001, so every transaction here is retried on 40001 (and on a deadlock,
40P01) from its start, each statement idempotent within it.

# Durability

A commit returns once the database says it is durable (PostgreSQL's
synchronous_commit, on by default; CockroachDB's replicated commit). What
is torn is the database's to repair.
*/
package postgres
