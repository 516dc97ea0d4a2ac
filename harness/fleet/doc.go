// Package fleet serves the agents of one process, each on its own
// listener, as lnk-link-harness serve does (API.md, "Serving"): agents
// join and leave as the agents file is read again, sleep once idle
// holding their listener alone and wake at their next request, and a blank
// unit is bound to its agent by one line on its control socket.
//
// Run is the whole of it, given what main built: the logger, the server
// (harness/server) that answers every agent, the clients of the model
// proxy and tool servers, the warm cache, the metrics, the budget's plan,
// the process's environment, and how an agent's conversations are opened
// and its key read; nothing here reads the environment or a signal of its
// own.
//
// What an agent holds awake is made by Unit.agent (agent.go) and let go
// of when it sleeps or leaves (running.go). Its connections are the
// process's one HTTP server's (conns.go), counted in the descriptor
// budget's pool before each is accepted (listener.go): a connection that
// finds no room waits in its listener's queue, and idle connections are
// given back when a cache needs their room. One goroutine watches every
// agent's listener (waiter.go), one timer puts agents to sleep (dozer.go),
// and while every agent sleeps the collector is quiet (quiet.go). A
// graceful stop (run.go) takes no new connection, answers every message
// already asked, and ends the turns still running once the grace is over.
package fleet
