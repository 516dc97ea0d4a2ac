package main

import (
	"fmt"
	"strings"
)

// A command is one of lnk's commands, said once: lnk's usage, the lists of
// lnk agent and lnk agent chat, and the command's own --help are all made
// from it, and its flag set from its kind (see flags).
type command struct {
	name string // the words after lnk that name it: "agent chat list"
	kind kind   // the flags it shares with the commands of its kind
	// args is its synopsis after its name, as its --help shows it; an
	// agent command's [--home DIR | --agent NAME] follows.
	args string
	// listed is its synopsis in the lists of commands, where they show it
	// shorter than args; inLnk, in lnk's own list, where that shows it
	// shorter still.
	listed, inLnk string
	// brief is what it does in a few words, in the one list that says it:
	// lnk's for the commands outside lnk agent, lnk agent chat's for its
	// own. It stands at column, and at least three spaces after the
	// synopsis.
	brief  string
	column int
	does   string // what it does, its --help's paragraph
	// stopped is set on a chat command that works only on a stopped agent:
	// it holds the agent's home while it runs (see holdStopped).
	stopped bool
	// run runs it with its arguments after its name, f made from this
	// entry, in the environment getenv reads.
	run func(f flags, args []string, getenv func(string) string) error
}

// A kind is what flags a command shares with others.
type kind int

const (
	// plainCommand has only flags of its own.
	plainCommand kind = iota
	// agentCommand works on one agent: --home DIR or --agent NAME names it.
	agentCommand
	// serverCommand listens: --listen ADDR.
	serverCommand
)

// agentArgs follows every agent command's synopsis.
const agentArgs = "[--home DIR | --agent NAME]"

// commands are lnk's commands, in the order its usage lists them.
func commands() []command {
	return []command{
		{name: "agent use", kind: agentCommand, run: cmdUse, args: "--harness NAME",
			does: "Chooses the harness that answers for the agent, and writes it as the agent's harness.json.\nKNOWN maps a name to its plugin and program (link is the plugin link-harness, the program\nlnk-link-harness); any other name x is the program lnk-x, which must be on PATH."},
		{name: "agent configure", kind: agentCommand, run: cmdConfigure, args: "--spec FILE",
			does: "Checks the agent's spec (TOML: [model], [window], [storage], [instructions]) and writes\nit as the agent's config.json, which each turn reads."},
		{name: "agent chat list", kind: agentCommand, run: cmdChatList,
			brief: "the agent's conversations", column: 55,
			does: "Lists the agent's conversations, one line each, sorted by thread, its fields separated\nby tabs: the thread, how it is kept (log, compact or the driver), its events, and\nits last activity (the last event's time, RFC 3339 UTC)."},
		{name: "agent chat show", kind: agentCommand, run: cmdChatShow, args: "THREAD [--summaries]", inLnk: "THREAD",
			brief: "a conversation's copy for people",
			does:  "Prints the conversation's copy for people, made from its events. With --summaries, each summary\nthe model wrote of what left its window is shown too, where it was written, marked as one."},
		{name: "agent chat convert", kind: agentCommand, run: cmdChatConvert, args: "--to log|compact|DRIVER", stopped: true,
			does: "Writes every conversation of a stopped agent the way --to says, each put in its place\nwith one rename. A driver is its program lnk-DRIVER, or the store bridge when\nLNK_STORE_BRIDGE is set."},
		{name: "agent chat repair", kind: agentCommand, run: cmdChatRepair, args: "THREAD", stopped: true,
			brief: "a damaged conversation, made usable", column: 62,
			does: "Repairs a damaged conversation of a stopped agent, kept as a log or compact: keeps\nthe events from seq 1 that read whole, moves everything after them beside the files\n(events.jsonl.damaged, events.zst.damaged; what a writer that stopped left to the\n.torn files), and says what it kept and what it moved. A driver's conversation is\nrepaired with the driver's own tools."},
		{name: "agent chat fork", kind: agentCommand, run: cmdChatFork, args: "THREAD --before SEQ --text T [--id ID] [--thread NEW]", listed: "THREAD --before SEQ --text T",
			brief: "a new conversation from THREAD's events before SEQ, then T",
			does:  "Makes a new conversation of THREAD's events before SEQ, an owner message, byte for byte, then\nthe message T in its place, and asks the model to answer it as a turn does (LNK_MODEL_PROXY, the\nLNK_TOOL_* tools). Prints the new thread and the answer. The new thread is NEW, or THREAD:forkSEQ\n(then .2, .3 … when taken)."},
		{name: "model show", kind: plainCommand, run: cmdModelShow, args: "NAME",
			brief: "what is known of a model, and where each field came from", column: 43,
			does: "Prints what is known of a model (anthropic/claude-opus-5-5, ollama/qwen3:8b) and where each\nfield came from: your $LNK_HOME/model-facts.toml, a runtime on the machine (Ollama, reached\nthrough LNK_MODEL_PROXY or LNK_MODEL_PROXY_OLLAMA), Link's built-in facts, or the spec's default."},
		{name: "measure", kind: plainCommand, run: cmdMeasure, args: "[flags]",
			brief: "what each agent costs, idle and per message", column: 43,
			does: "Starts the harness on temporary homes against the scripted model, sends each agent its\nmessages, and prints what each agent cost, idle and per message."},
		{name: "loadgen", kind: plainCommand, run: cmdLoadgen, args: "[flags]",
			brief: "many agents and conversations under load", column: 43,
			does: "Serves many agents in one lnk-link-harness process (serve --agents), sends each of their\nconversations its messages against the scripted model, and prints the throughput, the\nlatency the harness adds, the errors, memory over time and the largest bottleneck;\nwith --tool-share, the tool calls a second and the latency added with and without them."},
		{name: "scripted-model", kind: serverCommand, run: cmdScriptedModel, args: "[--listen ADDR] [--script FILE]", listed: "--listen ADDR [--script FILE]",
			does: "Serves the scripted model: Anthropic's and OpenAI's wire formats, answering as the script\nsays (default: \"ok: \" and a digest of each message, at once)."},
		{name: "tool-server", kind: serverCommand, run: cmdToolServer, args: "memory|file [--listen ADDR] --home DIR", listed: "memory|file --listen ADDR --home DIR",
			brief: "a built-in tool server", column: 43,
			does: "Serves a built-in tool server over the agent's home: streamable HTTP at /mcp,\nHTTP+SSE at /sse. Point LNK_MEMORY or LNK_FILE at it."},
		{name: "store-bridge", kind: serverCommand, run: cmdStoreBridge, args: "--home DIR --driver NAME --key-file F [--listen ADDR]", listed: "[flags]",
			brief: "a store driver's methods over HTTP", column: 43,
			does: "Answers POST /store/v1/{method} with the driver lnk-NAME run for the agent's home.\nThe harness finds it through LNK_STORE_BRIDGE (this address, as http://host:port)\nand LNK_STORE_BRIDGE_KEY_FILE (the same key)."},
	}
}

// synopsis is how c is called, "lnk NAME ARGS", with args in place of its
// args: its own, or a list's shorter ones.
func (c command) synopsis(args string) string {
	s := "lnk " + c.name
	if args != "" {
		s += " " + args
	}
	if c.kind == agentCommand {
		s += " " + agentArgs
	}
	return s
}

// inList is c's synopsis in the lists of lnk agent and lnk agent chat.
func (c command) inList() string {
	if c.listed != "" {
		return c.synopsis(c.listed)
	}
	return c.synopsis(c.args)
}

// inLnkList is c's synopsis in lnk's own list.
func (c command) inLnkList() string {
	if c.inLnk != "" {
		return c.synopsis(c.inLnk)
	}
	return c.inList()
}

// listOf is "usage:" and a line for each of cmds whose name begins with
// under: its synopsis as synopsis gives it, then its brief where
// withBrief says.
func listOf(cmds []command, under string, synopsis func(command) string, withBrief func(command) bool) string {
	var b strings.Builder
	b.WriteString("usage:")
	for _, c := range cmds {
		if !strings.HasPrefix(c.name, under) {
			continue
		}
		line := "  " + synopsis(c)
		if c.brief != "" && withBrief(c) {
			line += strings.Repeat(" ", max(3, c.column-len(line))) + c.brief
		}
		b.WriteString("\n" + line)
	}
	return b.String()
}

// usage is what lnk says of its commands: after a help word, or a mistake.
func usage(cmds []command) string {
	outsideAgent := func(c command) bool { return !strings.HasPrefix(c.name, "agent ") }
	return listOf(cmds, "", command.inLnkList, outsideAgent) + "\n\nEach command's --help says more of it."
}

// A group is a word of lnk that names no command of its own but those
// under it: lnk agent, lnk agent chat, lnk model.
type group struct {
	name  string                      // its words after lnk: "agent chat"
	says  string                      // the usage error when it is given no command of its own
	usage func(cmds []command) string // what it says after a help word
}

// groups are lnk's groups of commands.
func groups() []group {
	never := func(command) bool { return false }
	always := func(command) bool { return true }
	return []group{
		{name: "agent", says: "lnk agent: use, configure or chat", usage: func(cmds []command) string {
			return listOf(cmds, "agent ", command.inList, never) + `

Every lnk agent command names its agent by its home folder, --home DIR, or by
its name, --agent NAME, for $LNK_HOME/agents/NAME (LNK_HOME is ~/.lnk unless set).
lnk agent COMMAND --help says more of each.`
		}},
		{name: "agent chat", says: "lnk agent chat: list, show, convert, repair or fork", usage: func(cmds []command) string {
			return listOf(cmds, "agent chat ", command.inList, always)
		}},
		{name: "model", says: "model: lnk model show NAME", usage: func(cmds []command) string {
			show, _ := find(cmds, "model show")
			return "usage: " + show.synopsis(show.args) + "    " + show.brief
		}},
	}
}

// find returns the command of cmds named name.
func find(cmds []command, name string) (command, bool) {
	for _, c := range cmds {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// runNamed runs the command, or the group of commands, that args[0] names
// under the group under ("" for lnk itself), with the rest of args; false
// when args[0] names none.
func runNamed(cmds []command, under string, args []string, getenv func(string) string) (bool, error) {
	if strings.Contains(args[0], " ") {
		return false, nil // a name is one word
	}
	name := args[0]
	if under != "" {
		name = under + " " + name
	}
	if c, ok := find(cmds, name); ok {
		return true, c.run(c.flags(getenv), args[1:], getenv)
	}
	for _, g := range groups() {
		if g.name == name {
			return true, g.run(cmds, args[1:], getenv)
		}
	}
	return false, nil
}

// run runs the command of g args name first, with the rest; a help word
// alone prints g's usage, and anything else is the usage error g says.
func (g group) run(cmds []command, args []string, getenv func(string) string) error {
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Println(g.usage(cmds))
		return nil
	}
	if len(args) >= 1 {
		if ok, err := runNamed(cmds, g.name, args, getenv); ok {
			return err
		}
	}
	return usageError(g.says)
}
