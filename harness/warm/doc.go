// Package warm keeps, for the conversations a process has in use, what
// each one's last turn composed, so its next turn in the process need not
// read and compose it again.
//
// What is kept (Conv). Between drop points a conversation's request is the
// same bytes up to its last answer from turn to turn, so a turn keeps what
// it composed for the next: the conversation open, the events of its
// window decoded, the model's messages made of them and their wire bytes;
// and the files a turn reads and writes beside the log open (its folder,
// whose flock the next turn takes again on the same descriptor, the id
// index, the copy for people, the told file), so a warm message opens and
// closes none. The system prompt, the settings and the tools are read as
// every turn reads them (package instructions stats their files): nothing
// of them is kept here.
//
// When it is used. The next turn of the conversation in this process takes
// it back (Cache.Take) under the folder's lock and uses it only when
// nothing changed underneath: the conversation's last seq is the one the
// turn left, and its folder the same folder with the same times (another
// process's turn, a repair, a conversion, a folder removed and made again:
// composed afresh). The window is then found among the kept events by the
// same steps as among those read from the store, so a drop point or a
// summary moves it exactly as there; the messages and bytes are kept only
// while the window's start does not move, and only what came since is made
// and encoded.
//
// When it lets go, and what it costs. A Cache keeps at most
// MaxConversations conversations and MaxBytes of their events and wire
// bytes, about three times a window's bytes each: past either, the one
// used least lately is let go of; one with no turn for Idle is let go of
// at the next turn of any; and one holds up to seven descriptors (its
// log, its folder, its id index, its copy for people, its told file, a
// compact conversation's frames, and its agent's home), counted in the
// Cache's Pool, where there must be room for them. Forget and Release let
// go of an agent's, or all, when the agent or the process goes idle.
//
// A turn without a Cache is the same turn: every method of a nil *Conv
// keeps nothing and gives nothing back, and Messages makes and encodes all
// of a window's messages.
package warm
