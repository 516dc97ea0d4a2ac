// Package hometest gives tests of an agent's home and its turns what they
// start from. It draws thread names: names in other scripts, with
// punctuation and of the longest length, and names that differ from one
// drawn before only in case or in one character outside [A-Za-z0-9._-],
// the names that met in one folder under the rule before home.ThreadDir's
// (ThreadNames). It makes an agent's home of its own (Agent) and a
// scripted model for it (Model), writes a long conversation into a
// thread's folder as the log keeps it (WriteLog, Window), and has many
// callers send into one conversation at once and checks what they wrote
// (Share, CheckShared). It fills a home with something for every section
// of the prompt (Populate), and keeps what a runner or server logged
// (Logs).
package hometest
