// Package instructions reads, for a turn, what its agent's home says the
// model is to be told: the settings (config.json), and the system prompt's
// sections in settings.Sections' order, each from the file of the home the
// spec's [instructions] names, else Link's own (the base, the tools' words,
// the environment, the time), with the repository's instructions
// (AGENTS.md, else CLAUDE.md, of the files folder and its folders) and the
// skills' names and descriptions.
//
// What it read is kept (Cache): each file's text, a skill's front matter, a
// folder's names, under the file's identity and version, so a turn with
// nothing changed stats each file and reads and parses none; a file found
// missing is told missing still by one stat of its folder a turn; and the
// texts made from them (the sections, the system prompt) are the strings
// the last turn made while what they are made from is the same. The cache
// is a copy of the files, never more: a new process builds it again, and a
// turn without one (an empty Cache) reads the same prompt.
//
// A file is read beneath the agent's home and never through a symlink;
// one that cannot be taken leaves its section out, and the Reader's Log is
// told which and why: nothing wrong with a section stops a turn.
package instructions
