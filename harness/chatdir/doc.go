// Package chatdir finds which folder of an agent's home holds a thread's
// conversation. Every opener of a thread's folder asks Find (a turn, a read
// of the conversation, a fork, an import of ASP state, lnk agent chat show
// and repair), so all of them agree on it.
//
// A thread's folder is named by package home's rule (home.ThreadDir),
// under which no two threads share one. A conversation made under the rule
// before it (home.FormerThreadDir: telegram:42 was kept in telegram-42),
// where two names could meet in one folder, keeps the folder it was made
// in: when the folder the rule names is not there and the one the rule
// before named is, the thread its first event names says whose it is.
//
// What it costs: nothing for a plain name (web-1), whose folder is the
// same under both rules; one stat for any other name whose folder is
// there, the common case; and, only where a folder of the rule before is
// there and the rule's is not, the first event of that folder read once,
// through the opener the caller reads conversations with (a driver's
// conversation is its driver's to read). A folder is never renamed: a
// driver keeps a conversation under its folder's name.
package chatdir
