// Package pgtest gives a test of PostgreSQL's store a place of its own in
// the shared database LNK_TEST_POSTGRES_URL names: an agent of its own
// whose rows it removes at its end (URL, Forget), or a schema of
// its own (Schema), for the tests of the store and of the programs that
// keep conversations there.
package pgtest
