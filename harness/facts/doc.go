// Package facts is what is known of models, as data: Link's file of
// models' facts, built into the program (link.toml) and refreshed at every
// release, under the user's $LNK_HOME/model-facts.toml, which wins field by
// field, so a model newer than the program works without a release.
//
// A model's facts are its window and longest answer in tokens, the
// provider that names it, and its prices in USD per million tokens. Each
// field says where it came from: the user's file, a runtime on the machine
// (Ollama's /api/show), Link's file, or the spec's default.
//
// The policy that uses them is small pure functions: Window (the window's
// size, in the seed's order), AnswerRoom and Cost.
package facts
