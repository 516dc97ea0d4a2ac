/*
Package driver is the store driver protocol: the harness's client for a
driver reached as a plugin program or through the store bridge, and the
server side both answer with.

# The wire

A driver is a program lnk-<name>, started with --home DIR, speaking JSON-RPC
2.0 on its standard input and output, one JSON object a line:

	→ {"jsonrpc":"2.0","id":7,"method":"append","params":{"thread":"telegram-42~mxmekvd5hxz7cn2b","seq":3,"lease":2,"event":{"seq":3,…}}}
	← {"jsonrpc":"2.0","id":7,"result":{}}
	← {"jsonrpc":"2.0","id":8,"error":{"code":-32001,"message":"sqlite: …: store: seq taken: …"}}

Requests may be sent before earlier ones are answered; answers come in any
order, matched by id. The store bridge answers the same methods over HTTP:
POST /store/v1/{method} with the params object as the body and the agent's
key as bearer; the answer is the result object (200), or
{"error":"…","code":N} with a 4xx or 5xx status.

Methods, their params and results (a thread is the conversation's folder
name under chats/, which the first event names whole):

	append        {thread, seq, event, lease}   → {}             event is the JSON object itself, kept byte for byte
	read          {thread, from, limit, reverse}→ {events, more} events as appended; more: ask again from past the last
	last          {thread}                      → {last}
	threads       {}                            → {threads}
	lease         {thread, holder, ttl_ms}      → {token, took_over} took_over (optional): the holder whose lease ran out for this one
	release       {thread, token}               → {}
	meta_get      {thread, name}                → {data}         data is base64
	meta_put      {thread, name, data}          → {}
	meta_delete   {thread, name}                → {}
	tools_narrow  {thread, tools}               → {tools}
	forget        {thread}                      → {}             events and side data gone, the lease kept

took_over is optional: a driver that leaves it out still works, and a
lease it gives is never said to be taken over. forget is optional too:
lnk agent chat convert calls it once a conversation it moved out of the
driver is in its folder; a driver without it answers -32601, and its rows
stay. FORMATS.md, "Store drivers", says the same for a driver's author.

Error codes, part of the protocol, each the store sentinel it carries:

	-32001 store.ErrSeqTaken     -32005 store.ErrCorrupt
	-32002 store.ErrGap          -32006 store.ErrStaleLease
	-32003 store.ErrNotFound     -32007 store.ErrLeaseHeld
	-32004 store.ErrBadEvent     -32008 ErrTimeout
	-32009 store.ErrBadName      -32010 store.ErrTooLarge
	-32601 store.ErrUnsupported (a method the driver does not have)
	-32700, -32600, -32602, -32603, -32000 as JSON-RPC says; anything else

# Time limits and processes

A call past CallTimeout (30 seconds) is stopped: the client gives up with
ErrTimeout, and a plugin program's child process is killed, since stopping
its call is the only way to be sure it does not write later; the next call
starts a new one. The server puts the same limit on each call it runs.

A plugin program is started by the first call of a conversation kept by its
driver, not when the harness starts, and its standard input is closed once
no call has been made for the Process's idle time (IdleTimeout, 10 seconds,
by default), which ends it: an idle agent holds no process, and a busy one
pays for starting it only once per burst of turns.
*/
package driver
