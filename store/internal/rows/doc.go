// Package rows is what the drivers that keep a conversation as records
// they change in one step (sqlite and postgres in a transaction, pebble
// under the conversation's lock) decide the same way: an append fenced by
// the lease's token, a lease taken, renewed or let go, a side datum read,
// and the tool list narrowed. A driver hands in its step's reads and
// writes as a Step; the policy is here once, and the records' shapes stay
// the driver's.
package rows
