// Package measure is `lnk measure`: what each agent of a harness costs,
// idle and per message, as Link Harness is judged.
//
// Run sets everything up itself on a temporary folder: it finds the
// harness program (drive.FindHarness: --harness, PATH, beside lnk, or built from
// the source tree), serves the scripted model (loadgen/scripted) on
// loopback in its own process, and, for each case, makes each agent a home
// (its conversation written ahead when the case has a length), a key file,
// and a process:
//
//	lnk-link-harness serve --home <tmp>/<case>/agents/agent-N --listen 127.0.0.1:0 \
//		--key-file <tmp>/<case>/keys/agent-N.key --idle-free 1s
//
// with LNK_MODEL_PROXY set to the scripted model (and no other LNK_
// variable); in the layout Shared, one process of `serve --agents FILE`,
// one agent too, the file saying [serve] sleep_after. With Config.Profile
// each process also writes a CPU profile (--cpuprofile), whose memory and
// CPU then count in the idle figures.
//
// A case runs in this order, each process sampled from /proc at each step
// (Config.Observe is told of each, with the process):
//
//  1. fresh: every agent listening, before any message. No collection
//     can be asked of a process from outside, so this one is without.
//  2. asleep, fresh (Shared): sleep_after made a second by SIGHUP, each
//     agent touched (its /metrics page, no turn) so its timer takes it;
//     sampled once the process logs that every agent sleeps and their
//     memory went back, after its collection. Then sleep_after is a day
//     again.
//  3. warm-up: each agent answers Warmup messages (default 1): the fixed
//     count of messages per agent the idle memory is read at, whatever
//     the count of agents.
//  4. worked: 1.5 s after the last answer (--idle-free 1s: the process
//     collected and gave memory back), idle memory; then a quiet window of
//     Idle, for idle CPU.
//  5. the measured messages: Messages per agent (default: 200 in all,
//     shared among the case's agents), round after round over the agents,
//     Concurrency at once.
//  6. asleep, after work (Shared): as 2, then a quiet window of Idle
//     asleep, for idle CPU; then every agent sent one more message, each
//     answered counted.
//  7. every process stopped with SIGTERM.
//
// What is measured, per agent:
//
//   - memory: RSS, PSS and anonymous memory from /proc/PID/smaps_rollup,
//     fresh (1), after the warm-up (4) and, summed over the processes,
//     asleep (2, 6); CPU seconds per second over the quiet windows;
//   - per message: CPU of the process over the measured messages (its
//     CPU-time clock, to the nanosecond), divided by them, less the one
//     scrape's; the client's latency and the time the harness adds
//     (latency less the model's share, lnk_model_call_seconds), mean, p50 and
//     p99; the harness's own turn time; bytes from /proc/PID/io (rchar and
//     wchar: read and write calls of any kind; read_bytes and write_bytes:
//     the disk) and the store's event bytes (lnk_store_bytes_*); heap
//     objects and bytes allocated (go_heap_allocs_*). The process is
//     sampled right before the first message and right after the last, the
//     metrics scraped outside that span: twice before it, so what one
//     scrape allocates is taken off the counts, and once after.
//
// With profiles, they are merged and the top functions by flat and
// cumulative time named, the scheduler's idle spinning left out
// (loadgen/profile); the largest bottleneck is the top flat function,
// with the nearest function of Link Harness's own code beneath it.
//
// Cases: each length with the fewest agents, then each count of agents
// with the shortest conversation (plan); cost per message is read against
// the length and idle memory against the count.
//
// # JSON
//
// `lnk measure --json` writes report.Result, version 2 (report.ResultVersion). Times are
// seconds, sizes bytes, shares 0 to 1:
//
//	{"version": 2, "harness": "link", "program": "/…/lnk-link-harness",
//	 "started": "2026-…Z", "seconds": 5.1,
//	 "machine": {"cpus": 2, "os": "linux", "arch": "amd64", "kernel": "6.…"},
//	 "settings": {"messages": 20, "warmup": 1, "concurrency": 1, "idle_seconds": 3,
//	   "lengths": [0], "agents": [3], "agents_per_process": 1, "thread": "measure-1", "profiled": false},
//	 "cases": [{"length": 0, "agents": 3, "processes": 3, "messages": 201, "errors": 0,
//	   "messages_per_agent": 67, "warmup": 1,
//	   "model": {"requests": 1, "request_bytes": 3400, "max_bytes": 5800, "seconds": 0.0001},
//	   "median": AGENT, "per_agent": [AGENT, …]}],
//	 "profile": {"profiles": 3, "samples": 7, "seconds": 0.07, "idle": 0.01,
//	   "flat": [{"name": "…", "seconds": 0.01, "share": 0.14}, …], "cum": […],
//	   "largest": "…", "via": "lnk.dev/linkharness/…"}}
//
// where AGENT is
//
//	{"name": "agent-1", "pid": 1234,
//	 "start": {"rss": 8.3e6, "pss": 3.3e6, "anon": 2.1e6},
//	 "idle": {"rss": 11.7e6, "pss": 6.2e6, "anon": 5e6, "cpu": 0.00003, "goroutines": 18},
//	 "per_message": {"cpu": 0.00128,
//	   "latency": {"mean": 0.0018, "p50": 0.0017, "p99": 0.0031},
//	   "added": {"mean": 0.0016, "p50": 0.0015, "p99": 0.0030},
//	   "turn": 0.0013, "model": 0.0002,
//	   "read_chars": 38900, "written_chars": 4700, "disk_read": 0, "disk_written": 8800,
//	   "store_read": 13500, "store_written": 798, "allocs": 414, "alloc_bytes": 107100,
//	   "errors": 0, "messages": 20, "turns": 20, "turn_errors": 0}}
//
// Fields may be added within a version; none changes meaning or goes.
//
// # Other harnesses
//
// A harness is reached through drive.Harness and drive.Unit: drive.Link is
// Link Harness over HTTP; peer.Command drives another harness by one
// command per message (measure/peer says which it knows and how it finds
// them). A peer that cannot run here, or one whose run fails, is told as
// not run, with why (Config.NotRun, report.PeerResult.NotRun).
// Config.Peers are measured in the same run as Link Harness, against the
// same scripted model, PeerMessages messages each (5 by default, after one
// warm-up; the floor as many as Link Harness's cases): per message the
// command's CPU (wait4's, descendants included) and peak resident memory;
// idle, the interactive program started in a terminal of its own, its
// process tree sampled after it settles.
//
// # Layouts
//
// Each count of agents runs as one process per agent (report.Each) and,
// with --layout each,shared, as one process serving every agent of the
// case (report.Shared, `serve --agents FILE`, each agent on its own port).
// report.Marginal reads, per layout, what one more idle agent adds (the
// slope of the processes' summed memory against the count of agents:
// awake fresh and after the warm-up; asleep fresh and after work, where
// agents sleep), the idle CPU at each count, and what one more message
// costs (all the processes' CPU over all the messages): the figures to
// compare with a harness that runs a process per agent.
//
// # Report
//
// report.Result's WriteTable writes at most 100 columns, each table's
// columns told in a line each beneath it. WriteReport writes report.md
// with two SVG plots (measure/plot): memory against the count of agents,
// cost per message against the window; then result.json and result.txt.
//
// # Packages
//
// measure is Run and the steps of a case; beneath it are the other
// harnesses it measures (measure/peer), what a run found and how it is
// told (measure/report), and the plots of the report (measure/plot).
//
// What measure shares with `lnk loadgen` lives beneath loadgen, which
// imports nothing of measure: loadgen/drive starts a harness and sends it
// messages, loadgen/proc samples a process from /proc, loadgen/profile
// summarizes CPU profiles, loadgen/stats holds the quantiles, and
// loadgen/scripted is the model both answer with.
package measure
