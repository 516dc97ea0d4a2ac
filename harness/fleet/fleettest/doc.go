// Package fleettest writes agents files and speaks to the agents a fleet
// serves, for the tests of package fleet and of the program that runs
// one: an agent's home, key file and [[agent]] entry (Agent), the key
// each test agent is given (Key), a message sent to an agent (Post), and
// the line a fleet prints when an agent listens (Listening). A test that
// measures what its own process holds starts what it talks to in a
// process of its own (Peer).
package fleettest
