// Package peer is the other harnesses `lnk measure --peers` measures beside
// Link Harness, each a drive.Harness measure.Run drives as it drives Link
// Harness.
//
// A Command is a harness driven by one command per message (`claude -p
// TEXT`, then `claude -p --continue TEXT`), each agent with its own HOME
// holding the harness's settings pointed at the scripted model; per
// message it counts the command's CPU (wait4's, descendants included) and
// peak resident memory, and idle, the interactive program started in a
// terminal of its own, its process tree sampled. Find knows Claude Code,
// Codex, opencode and pi as BENCHMARKS.md, "Peers", installs them, and
// crush, which it builds with the go command when it is not found; it
// finds what a peer lacks before anything runs (git, node, the program, a
// working --version) and says how to get it (ErrMissing).
//
// Floor is bench/floor, the least a warm harness does per message, built
// from the source tree (BuildFloor) and driven as Link Harness is, so Link
// Harness's CPU per message is told as a ratio to it.
package peer
