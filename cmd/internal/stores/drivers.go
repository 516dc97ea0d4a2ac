package stores

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lnk.dev/linkharness/cmd/internal/cli"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/durable"
)

// markerPrefix starts the empty file that says a driver keeps a folder:
// store.<driver>.
const markerPrefix = "store."

// homeOf is the agent's home of the conversation folder dir
// (<home>/chats/<dir>).
func homeOf(dir string) string { return filepath.Dir(filepath.Dir(dir)) }

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

// mark makes the marker, durably, and the folder's name with it: its
// maker left that to the folder's first writer (durable.MakeDirDeferred).
func mark(dir, name string) error {
	f, err := os.OpenFile(filepath.Join(dir, markerPrefix+name), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("stores: %w", err)
	}
	f.Close()
	if err := durable.SyncDir(dir, filepath.Dir(dir)); err != nil {
		return fmt.Errorf("stores: %w", err)
	}
	return nil
}

// driverFor returns the driver keeping home's conversations for name: the
// store bridge when one is set, which answers for whatever driver it runs,
// or else the plugin program lnk-<name>, beside this program or on PATH.
func (o *Opener) driverFor(home, name string) (*driver.Driver, error) {
	key := home + "\x00" + name
	if o.Bridge != "" {
		key = o.Bridge
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if d := o.drivers[key]; d != nil {
		return d, nil
	}
	var t driver.Transport
	if o.Bridge != "" {
		t = driver.NewHTTP(o.Bridge, o.BridgeKey, nil)
	} else {
		path, err := driver.Find(name)
		if err != nil {
			return nil, err
		}
		p := driver.NewProcess(path, "--home", home)
		p.Log, p.Env = o.Log, o.Environ
		t = p
	}
	if o.drivers == nil {
		o.drivers = make(map[string]*driver.Driver)
	}
	d := driver.New(t)
	o.drivers[key] = d
	return d, nil
}

// Kept returns the driver whose marker is in folder dir, or "" when the
// folder keeps its conversation itself (the log, compact).
func (o *Opener) Kept(dir string) (string, error) {
	f, err := o.look(dir)
	if err != nil {
		return "", err
	}
	return marked(dir, f)
}

// Mark makes the marker saying driver name keeps the conversation of
// folder dir, durably.
func (o *Opener) Mark(dir, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return mark(dir, name)
}

// OpenKept opens the conversation driver name keeps under the name of
// folder dir, whatever the folder says now. lnk agent chat convert writes
// a conversation into a driver while its folder still keeps it another
// way, and forgets a driver's copy once the folder no longer names it.
func (o *Opener) OpenKept(dir, name string) (store.Conversation, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	d, err := o.driverFor(homeOf(dir), name)
	if err != nil {
		return nil, err
	}
	return d.Open(filepath.Base(dir))
}

// Close ends every driver the opener reached, waiting for their programs
// to end. The opener can be used again after.
func (o *Opener) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var errs []error
	for key, d := range o.drivers {
		errs = append(errs, d.Close())
		delete(o.drivers, key)
	}
	return errors.Join(errs...)
}

// Bridged says whether the store bridge answers for every driver, so that
// two drivers' names reach one store.
func (o *Opener) Bridged() bool { return o.Bridge != "" }

// FromEnv is the opener main builds from the environment getenv reads:
// the store bridge and its key when LNK_STORE_BRIDGE is set.
func FromEnv(getenv func(string) string) (*Opener, error) {
	o := &Opener{Bridge: getenv(BridgeEnv)}
	if o.Bridge == "" {
		return o, nil
	}
	path := getenv(BridgeKeyEnv)
	if path == "" {
		return nil, fmt.Errorf("stores: %s is set, and %s, the file of the agent's key it is proved with, is not", BridgeEnv, BridgeKeyEnv)
	}
	key, err := cli.ReadKey(path)
	if err != nil {
		return nil, fmt.Errorf("stores: the store bridge's key (%s): %w", BridgeKeyEnv, err)
	}
	o.BridgeKey = []byte(key)
	return o, nil
}
