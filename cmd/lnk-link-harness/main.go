// Command lnk-link-harness takes an LLM agent's turns for Link: a message
// comes in over HTTP, the turn reads what it needs of the conversation from
// the agent's home, calls the model through Link's model proxy, and appends
// every event once.
//
//	lnk-link-harness serve --home DIR --listen ADDR --key-file F [--agent NAME]
//	lnk-link-harness serve --agents FILE
//	lnk-link-harness serve --blank CONTROL [--sleep-after D]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"lnk.dev/linkharness/cmd/internal/cli"
	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/server"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/harness/warm"
)

const usage = `usage: lnk-link-harness serve --home DIR --key-file F [--listen ADDR] [--agent NAME]
       lnk-link-harness serve --agents FILE
       lnk-link-harness serve --blank CONTROL [--sleep-after D]

Takes an agent's turns over HTTP. The model is reached through Link's model
proxy: LNK_MODEL_PROXY, or LNK_MODEL_PROXY_<PROVIDER> for one provider.
lnk-link-harness serve --help lists serve's flags.`

func main() {
	if len(os.Args) == 2 && isHelp(os.Args[1]) {
		fmt.Println(usage)
		return
	}
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err := serve(os.Args[2:], os.Environ()); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "lnk-link-harness:", err)
		os.Exit(1)
	}
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// serve serves the agents args name, in the environment environ: each
// agent opens its conversations through the store bridge its environment
// names, or through each driver's program.
func serve(args, environ []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: lnk-link-harness serve --home DIR --key-file F [--listen ADDR] [--agent NAME]\n       lnk-link-harness serve --agents FILE\n       lnk-link-harness serve --blank CONTROL [--sleep-after D]\n\nServes the agents' turns over HTTP, printing \"listening on ADDR\" for each. It refuses to\nstart without a model proxy for an agent's provider (LNK_MODEL_PROXY, or\nLNK_MODEL_PROXY_<PROVIDER>), or with a [storage] conversations it cannot keep.\nWith --agents, SIGHUP reads the file again: agents join and leave. With --blank,\nit prints \"blank on CONTROL\" and serves nothing until one JSON line on the unix\nsocket CONTROL binds it to an agent; it ends once that agent sleeps.\n\nflags:")
		fs.PrintDefaults()
	}
	homeDir := fs.String("home", "", "the agent's home folder")
	listen := fs.String("listen", "127.0.0.1:0", "the address to listen on; port 0 picks a free one")
	keyFile := fs.String("key-file", "", "a file holding the agent's key on one line")
	agent := fs.String("agent", "", "the agent's name (default: the home folder's name)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file when stopped")
	agents := fs.String("agents", "", "serve many agents of one owner, from a TOML file of [[agent]] name, home, listen, key_file and [agent.env]; SIGHUP reads it again")
	blank := fs.String("blank", "", "start a blank unit bound by one line on this unix socket")
	blankSleep := fs.Duration("sleep-after", DefaultSleepAfter, "with --blank, how long the bound agent answers nothing before it sleeps and the unit ends; 0 never")
	logLevel := fs.String("log-level", "info", "the least level logged, as JSON lines on stderr: debug, info, warn or error")
	grace := fs.Duration("grace", 30*time.Second, "on SIGTERM or SIGINT, how long running turns may go on before they are ended (a second signal ends them at once)")
	exitAsleep := fs.Bool("exit-when-asleep", false, "with --agents, end the process once every agent sleeps ([serve] sleep_after in the agents file)")
	maxTurns := fs.Int("max-turns", 0, "the most turns in flight at once; past it a message is refused 503 with Retry-After (default: 256, lowered to what the descriptor limit leaves room for)")
	idleFree := fs.Duration("idle-free", server.DefaultIdleFree, "once no turn has run for this long after the last one ended, give the memory the turns freed back to the system; 0 never")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected arguments %q", fs.Args())
	}
	if *grace < 0 {
		return fmt.Errorf("--grace %v: want a duration of 0 or more", *grace)
	}
	if *idleFree < 0 {
		return fmt.Errorf("--idle-free %v: want a duration of 0 or more", *idleFree)
	}
	log, err := newLogger(*logLevel)
	if err != nil {
		return err
	}
	var units []unit
	var sleepAfter time.Duration
	turnsAsked := *maxTurns
	setFlags := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { setFlags[fl.Name] = true })
	switch {
	case *blank == "" && setFlags["sleep-after"]:
		return errors.New("--sleep-after is for --blank; an agents file says [serve] sleep_after")
	case *blank != "":
		if *homeDir != "" || *keyFile != "" || *agents != "" || setFlags["agent"] || setFlags["listen"] {
			return errors.New("--blank takes its agent from the control line: give no --home, --key-file, --agents, --agent or --listen with it")
		}
		if *blankSleep < 0 {
			return fmt.Errorf("--sleep-after %v: want a duration of 0 or more", *blankSleep)
		}
		// Bound, the unit ends when its agent sleeps.
		sleepAfter, *exitAsleep = *blankSleep, *blankSleep > 0
	case *agents != "":
		if setFlags["max-turns"] {
			return errors.New("--max-turns is for --home and --blank; an agents file says [serve] max_turns")
		}
		if *homeDir != "" || *keyFile != "" {
			return errors.New("--agents names every agent's home and key: give no --home or --key-file with it")
		}
		file, err := readAgents(*agents)
		if err != nil {
			return err
		}
		units, sleepAfter, turnsAsked = file.units, file.sleepAfter, file.maxTurns
		if *exitAsleep && sleepAfter == 0 {
			return fmt.Errorf("--exit-when-asleep: the agents of %s never sleep ([serve] sleep_after = \"never\")", *agents)
		}
	case *exitAsleep:
		return errors.New("--exit-when-asleep is for --agents, whose agents sleep")
	case *homeDir == "" || *keyFile == "":
		return errors.New("serve needs --home and --key-file, or --agents FILE")
	default:
		units = []unit{{Name: *agent, Home: *homeDir, Listen: *listen, KeyFile: *keyFile}}
	}
	if *maxTurns < 0 || setFlags["max-turns"] && *maxTurns == 0 {
		return fmt.Errorf("--max-turns %d: want 1 or more", *maxTurns)
	}
	plan, err := budget.Plan{Limit: descriptorLimit(), Agents: max(1, len(units)), MaxTurns: turnsAsked}.Sized()
	if err != nil {
		return err
	}
	// Done once a graceful stop's grace is over: every running turn ends.
	ending, endTurns := context.WithCancel(context.Background())
	defer endTurns()
	// What the process's turns composed, kept for each conversation's
	// next turn while it is in use: let go of when the process goes idle
	// and when an agent sleeps.
	// What the warm cache keeps open between turns, counted.
	warm := &warm.Cache{Pool: budget.NewPool(plan.Cached())}
	sh := newShared(environ, log, ending, warm, budget.NewTurns(plan.MaxTurns))
	opts := server.Options{Log: log, Warm: warm, CloseIdle: sh.closeIdle, Metrics: sh.metrics, Turns: sh.turns}
	if *idleFree > 0 {
		opts.FreeMemory, opts.IdleFree = freeMemory, *idleFree
	}
	srv, err := server.New(opts)
	if err != nil {
		return err
	}
	f := &fleet{
		shared: sh,
		plan:   plan, pool: budget.NewPool(plan.Conns()), srv: srv, out: os.Stdout,
		named: len(units) > 1, grace: *grace,
		errc: make(chan error, 1), dozed: make(chan struct{}, 1), running: map[string]*running{},
	}
	f.sleepAfter.Store(int64(sleepAfter))
	// One goroutine of the process watches every agent's listener: an
	// agent, awake or asleep, has no accept loop of its own.
	if f.waiter, err = newWaiter(); err != nil {
		log.Warn("each agent has an accept loop of its own", "error", err)
	}
	// The signals are caught before the first "listening on" line: a
	// supervisor may stop the process as soon as it reads one, and a SIGTERM
	// before Notify would end it at once, with nothing stopped gracefully.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(stop)
	hup := make(chan os.Signal, 1)
	if *agents != "" {
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	// Each agent on its own port, as itself; a request naming another agent
	// needs that agent's key.
	js, err := f.prepare(units)
	if err != nil {
		return err
	}
	// A blank unit holds nothing of anyone's until a control line binds
	// it; then it refuses every other.
	var binds chan binding
	bound := false
	if *blank != "" {
		ln, err := listenControl(*blank)
		if err != nil {
			return fmt.Errorf("--blank: %w", err)
		}
		defer ln.Close()
		binds = make(chan binding)
		go control(ln, binds, log)
		fmt.Fprintf(os.Stdout, "blank on %s\n", *blank)
	}
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); pf.Close() }()
	}
	// Later agents of a file that reads again print their names too.
	if err := f.join(js); err != nil {
		f.stopAll()
		return err
	}
	f.named = *agents != ""
	var serveErr error
	var freeing *time.Timer // gives back memory once every agent stayed asleep
	freeAsleep := make(chan struct{}, 1)
	defer func() {
		if freeing != nil {
			freeing.Stop()
		}
	}()
loop:
	for {
		select {
		case serveErr = <-f.errc:
			break loop
		case <-stop:
			break loop
		case <-f.dozed:
			if !f.asleep() {
				continue
			}
			f.rest()
			if *exitAsleep {
				log.Info("every agent asleep: stopping")
				break loop
			}
			// What the agents let go of goes back to the system once
			// they stay asleep for --idle-free (their connections' last
			// goroutines ended by then), the garbage of their making at
			// the start too, which no turn's end would free.
			if *idleFree > 0 {
				if freeing == nil {
					freeing = time.AfterFunc(*idleFree, func() {
						select {
						case freeAsleep <- struct{}{}:
						default:
						}
					})
				} else {
					freeing.Reset(*idleFree)
				}
			}
		case <-freeAsleep:
			if f.asleep() {
				freeMemory()
				f.quiet.start(f.asleep)
				log.Info("every agent asleep: memory given back")
			}
		case b := <-binds:
			bound = f.bind(b, bound)
		case <-hup:
			if err := f.reload(*agents); err != nil {
				log.Error("agents file not read again: nothing changed", "file", *agents, "error", err)
			}
		}
	}
	// A graceful stop: no new connection is taken, every message already
	// asked is answered, and turns whose caller left run to their end, for
	// the grace; then (or at a second signal) the turns still running are
	// ended, what they wrote kept for the next turn, and their callers told
	// 503.
	stopping := time.Now()
	running := srv.Running()
	log.Info("stopping", "turns", running, "grace_seconds", grace.Seconds())
	over := time.AfterFunc(*grace, func() {
		log.Warn("grace over: ending the running turns", "turns", srv.Running())
		endTurns()
	})
	defer over.Stop()
	go func() {
		select {
		case <-stop:
			log.Warn("a second signal: ending the running turns", "turns", srv.Running())
			endTurns()
		case <-ending.Done():
		}
	}()
	// A connection that is no turn's (a slow body) is closed a little after
	// the grace, so the process exits within it and that margin.
	f.stopAll()
	srv.Wait()
	log.Info("stopped", "turns", running, "seconds", time.Since(stopping).Seconds())
	return serveErr
}

// newShared is what the agents of a process share.
func newShared(environ []string, log *slog.Logger, ending context.Context, warm *warm.Cache, turns *budget.Turns) shared {
	return shared{
		environ: environ, log: log, ending: ending, warm: warm, turns: turns,
		// The process's one client of the model proxy, speaking HTTP/1.1
		// on the turn's goroutine (model.Transport): a kept connection
		// costs no goroutine, and the idle ones, at most
		// budget.MaxIdleModel, are the process's, not an agent's each.
		model:   &http.Client{Transport: &model.Transport{MaxIdle: budget.MaxIdleModel, IdleTimeout: 30 * time.Second}},
		tools:   &http.Client{Transport: transport()},
		facts:   &facts.Cache{},
		metrics: new(metrics.Process),
	}
}

// descriptorLimit is the process's limit on open descriptors, its soft
// limit raised to the hard one (as Go does at start on Linux; done again
// here where it did not).
func descriptorLimit() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return int(min(lim.Cur, 1<<30))
}

// freeMemory gives the heap a burst of turns freed back to the system. The
// first collection moves what sync.Pools hold (the HTTP server's buffers,
// the turns' windows) to their victim caches, the second frees it, and
// FreeOSMemory's own collection then returns every free page at once
// rather than at the background scavenger's pace.
func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// stopMargin is how long past the grace a graceful stop waits for a
// connection that is no turn's before it closes it.
const stopMargin = 5 * time.Second

// newLogger is the process's one logger: JSON lines on stderr from level
// on.
func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// ready says why the agent r serves cannot take a turn as its settings
// stand, before it is served: its settings cannot be read, its
// conversations' kind is not one opener keeps, or no model proxy reaches
// its model's provider (or its fallback's). Each turn reads the settings
// again, and fails with the same error when one of these comes later.
func ready(r *turn.Runner, getenv func(string) string, opener *stores.Opener) error {
	var s settings.Settings
	if r.Settings != nil {
		s = *r.Settings
	} else {
		path, err := r.Agent.Path(home.Config, "")
		if err != nil {
			return err
		}
		if s, err = settings.Read(path); err != nil {
			return fmt.Errorf("agent %s: %w", r.Agent.Name, err)
		}
	}
	if err := opener.Check(r.Agent.Dir, s.Storage.Conversations); err != nil {
		return fmt.Errorf("agent %s: [storage] conversations: %w", r.Agent.Name, err)
	}
	factsPath, err := facts.UserPath(getenv)
	if err != nil {
		return err
	}
	book, err := facts.Load(factsPath)
	if err != nil {
		return err
	}
	for _, m := range []struct {
		what string
		settings.Model
	}{{"model", s.Model}, {"fallback model", settings.Model{Name: s.Model.Fallback}}} {
		if m.Name == "" {
			continue
		}
		provider := m.Provider
		if provider == "" {
			f := book.Model(m.Name)
			provider = f.Provider.Value
		}
		if _, err := model.New(provider, getenv, nil); err != nil {
			return fmt.Errorf("agent %s: %s %s: %w", r.Agent.Name, m.what, m.Name, err)
		}
	}
	return nil
}

// lookup reads environ, a copy of the environment as os.Environ gives it:
// the last setting of a name counts. It looks through environ at each
// call, as a turn asks for few names: an awake agent keeps no map of the
// whole environment (some 2 KiB each).
func lookup(environ []string) func(string) string {
	return func(k string) string {
		for i := len(environ) - 1; i >= 0 && k != ""; i-- {
			if v, ok := strings.CutPrefix(environ[i], k); ok && len(v) > 0 && v[0] == '=' {
				return v[1:]
			}
		}
		return ""
	}
}

func readKey(path string) (string, error) {
	key, err := cli.ReadKey(path)
	if err != nil {
		return "", fmt.Errorf("--key-file: %w", err)
	}
	if key == "" || strings.ContainsAny(key, "\n\r") {
		return "", fmt.Errorf("--key-file %s: want the key on one line", path)
	}
	if len(key) < 16 {
		return "", fmt.Errorf("--key-file %s: a key of %d bytes is too short (16 at least)", path, len(key))
	}
	return key, nil
}

// closers closes each of its Closers, in order.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
