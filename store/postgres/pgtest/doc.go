// Package pgtest gives a test a PostgreSQL schema of its own, in the
// database LNK_TEST_POSTGRES_URL names, for the tests of the programs that
// keep conversations in PostgreSQL.
package pgtest
