package stores

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
)

// Where the store bridge is: LNK_STORE_BRIDGE is its base URL, and
// LNK_STORE_BRIDGE_KEY_FILE a file holding the agent's key on one line (the
// key file the harness serves with). The key stays in a file so it is not
// handed down to every program the harness starts with its environment.
const (
	bridgeEnv    = "LNK_STORE_BRIDGE"
	bridgeKeyEnv = "LNK_STORE_BRIDGE_KEY_FILE"
)

// markerPrefix starts the empty file that says a driver keeps a folder:
// store.<driver>.
const markerPrefix = "store."

// drivers are the drivers in use, one per agent home and driver, kept for
// the process's life: a driver holds no process once idle.
var drivers struct {
	sync.Mutex
	m map[string]*driver.Driver
}

// openDriver opens the conversation in dir when a driver keeps it: its
// folder holds a store.<driver> marker, or it is new (no log, no frames)
// and kind names a driver, in which case the marker is made. It reports
// false when no driver keeps the folder.
func openDriver(dir, kind string, f folder, log *slog.Logger) (store.Conversation, bool, error) {
	name, err := marked(dir, f)
	if err != nil {
		return nil, true, err
	}
	if name == "" {
		if kind == "" || kind == "log" || kind == "compact" || !f.isNew() {
			return nil, false, nil
		}
		if err := checkName(kind); err != nil {
			return nil, true, err
		}
		if err := mark(dir, kind); err != nil {
			return nil, true, err
		}
		name = kind
	}
	d, err := driverFor(filepath.Dir(filepath.Dir(dir)), name, log)
	if err != nil {
		return nil, true, err
	}
	c, err := d.Open(filepath.Base(dir))
	return c, true, err
}

// marked returns the driver the folder's marker names, or "".
func marked(dir string, f folder) (string, error) {
	switch len(f.markers) {
	case 0:
		return "", nil
	case 1:
		name := strings.TrimPrefix(f.markers[0], markerPrefix)
		return name, checkName(name)
	}
	return "", fmt.Errorf("stores: %s has %d store markers, which is one too many", dir, len(f.markers))
}

func checkName(name string) error {
	if name == "" || len(name) > 50 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		return fmt.Errorf("stores: %q is no driver name (a-z, 0-9, - and _)", name)
	}
	return nil
}

// mark makes the marker, durably.
func mark(dir, name string) error {
	f, err := os.OpenFile(filepath.Join(dir, markerPrefix+name), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("stores: %w", err)
	}
	f.Close()
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("stores: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("stores: fsync %s: %w", dir, err)
	}
	return nil
}

// driverFor returns the driver keeping home's conversations for name: the
// store bridge when one is set, which answers for whatever driver it runs,
// or else the plugin program lnk-<name>, beside this program or on PATH.
func driverFor(home, name string, log *slog.Logger) (*driver.Driver, error) {
	bridge := os.Getenv(bridgeEnv)
	key := home + "\x00" + name
	if bridge != "" {
		key = bridge
	}
	drivers.Lock()
	defer drivers.Unlock()
	if d := drivers.m[key]; d != nil {
		return d, nil
	}
	var t driver.Transport
	if bridge != "" {
		b, err := os.ReadFile(os.Getenv(bridgeKeyEnv))
		if err != nil {
			return nil, fmt.Errorf("stores: the store bridge's key (%s): %w", bridgeKeyEnv, err)
		}
		t = driver.NewHTTP(bridge, []byte(strings.TrimSpace(string(b))), nil)
	} else {
		path, err := driver.Find(name)
		if err != nil {
			return nil, err
		}
		p := driver.NewProcess(path, "--home", home)
		p.Log = log
		t = p
	}
	if drivers.m == nil {
		drivers.m = make(map[string]*driver.Driver)
	}
	d := driver.New(t)
	drivers.m[key] = d
	return d, nil
}

// Kept returns the driver whose marker is in folder dir, or "" when the
// folder keeps its conversation itself (the log, compact).
func Kept(dir string) (string, error) {
	f, err := look(dir)
	if err != nil {
		return "", err
	}
	return marked(dir, f)
}

// Mark makes the marker saying driver name keeps the conversation of
// folder dir, durably.
func Mark(dir, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return mark(dir, name)
}

// OpenKept opens the conversation driver name keeps under the name of
// folder dir, whatever the folder says now. lnk agent chat convert writes
// a conversation into a driver while its folder still keeps it another
// way, and forgets a driver's copy once the folder no longer names it.
func OpenKept(dir, name string) (store.Conversation, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	d, err := driverFor(filepath.Dir(filepath.Dir(dir)), name, nil)
	if err != nil {
		return nil, err
	}
	return d.Open(filepath.Base(dir))
}

// CloseDrivers ends every driver this process reached, waiting for their
// programs to end, for a command done with them.
func CloseDrivers() error {
	drivers.Lock()
	defer drivers.Unlock()
	var errs []error
	for key, d := range drivers.m {
		errs = append(errs, d.Close())
		delete(drivers.m, key)
	}
	return errors.Join(errs...)
}

// Reach makes sure driver name can be reached for the agent at home: its
// name is one, and its program is there or the store bridge is set.
func Reach(home, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	_, err := driverFor(home, name, nil)
	return err
}

// Bridged says whether the store bridge answers for every driver, so that
// two drivers' names reach one store.
func Bridged() bool { return os.Getenv(bridgeEnv) != "" }
