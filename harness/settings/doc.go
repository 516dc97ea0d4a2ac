// Package settings reads an agent's spec (TOML, API.md's "Spec keys") and keeps
// it as config.json in the agent's home, which a turn reads at its start:
// a change of settings takes effect at the next turn, with no restart, and a
// process that never saw the spec reads the same file.
//
// A spec is read strictly: an unknown key, a value of the wrong type or out
// of range is refused with its line, and nothing is written.
package settings
