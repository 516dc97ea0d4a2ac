// Package budget is what one process of Link Harness may hold at once: the
// turns in flight and the descriptors its agents, their connections and
// its caches take. Main builds one Plan from the process's descriptor
// limit, the agents it serves and its max_turns, checks it fits before any
// agent is served (Check), and hands the parts to those that hold things:
//
//   - Turns bounds the turns in flight. A message that would begin a turn
//     past the bound is refused (ErrFull) before anything of it is
//     written, and told when a place is likely (RetryAfter, from the
//     turns' length lately and the refused waiting); a message that steers
//     a running turn takes no place.
//   - A Pool of Conns counts callers' connections: one is taken before a
//     connection is accepted, and with none left the listener waits for one
//     to close, its connection in the listener's queue; idle kept-alive
//     connections are closed first to make room (the Pool's Giver).
//   - A Pool of Cached counts what caches keep open between turns (a
//     conversation's folder and files kept warm): a cache keeps a
//     descriptor only where there is room, so a cache never fails a turn.
//
// The sum is fixed at start: every listener, the process's own Reserve,
// PerTurn for each turn the bound lets run, the connections, and what is
// left for caches.
// A process whose agents cannot fit is refused at start with ErrNoRoom,
// saying what they need and how to raise the limit.
package budget
