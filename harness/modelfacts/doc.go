// Package modelfacts is what a turn knows of its model, and where it
// learns it: Link's facts with the user's $LNK_HOME/model-facts.toml over
// them (package facts), read once a turn, so the window is sized and the
// answer priced with the same facts; and, for a model on a runtime on the
// machine, what the runtime says it runs the model with (Ollama's
// /api/show), kept a minute by the Runner. From them come the window's
// size and the answer's room, a refusal's words, and an answer's cost.
package modelfacts
