package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"lnk.dev/linkharness/cmd/internal/cli"
	"lnk.dev/linkharness/store/driver"
)

// cmdStoreBridge is `lnk store-bridge`: a store driver's methods over HTTP,
// for a harness whose sandbox must not hold what the driver needs to reach
// its store. The driver runs here as its plugin program, lnk-<driver>
// beside this program or on PATH; each call is proved with the agent's key.
// It serves until SIGINT or SIGTERM, then lets the calls under way finish.
func cmdStoreBridge(fs flags, args []string, _ func(string) string) error {
	home := fs.String("home", "", "the agent's home, handed to the driver")
	name := fs.String("driver", "", "the driver: the program lnk-NAME")
	keyFile := fs.String("key-file", "", "a file holding the agent's key on one line")
	if err := fs.parseAll(args); err != nil {
		return err
	}
	if *home == "" || *name == "" || *keyFile == "" {
		return usageError("store-bridge: --home, --driver and --key-file are needed")
	}
	key, err := cli.ReadKey(*keyFile)
	if err != nil {
		return fmt.Errorf("store-bridge: %w", err)
	}
	if key == "" {
		return fmt.Errorf("store-bridge: %s holds no key", *keyFile)
	}
	abs, err := filepath.Abs(*home)
	if err != nil {
		return fmt.Errorf("store-bridge: %w", err)
	}
	prog, err := driver.Find(*name)
	if err != nil {
		return fmt.Errorf("store-bridge: %w", err)
	}
	d := driver.New(driver.NewProcess(prog, "--home", abs))
	defer d.Close()

	srv := &http.Server{
		Handler:           driver.Handler(d, []byte(key)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
	}
	return serveUntilSignal("store-bridge", *fs.listen, srv, nil, driver.CallTimeout+5*time.Second, nil)
}
