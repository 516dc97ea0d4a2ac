package driver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/sqlite"
)

// A driver served and reached through the protocol: the SQLite driver
// behind Handler, as lnk store-bridge serves it, and the harness's side,
// New over an HTTP transport, which is a store.Driver like any other. A
// store's errors cross the wire as codes and come out as the same
// sentinels.
func Example() {
	dir, err := os.MkdirTemp("", "lnk-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	kept, err := sqlite.Open(filepath.Join(dir, sqlite.FileName))
	if err != nil {
		panic(err)
	}
	defer kept.Close()

	key := []byte("the agent's key")
	srv := httptest.NewServer(driver.Handler(kept, key))
	defer srv.Close()
	var d store.Driver = driver.New(driver.NewHTTP(srv.URL, key, nil))
	defer d.Close()

	c, err := d.Open("web:1")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	hello := event.Append(nil, &event.Event{Seq: 1, Time: at, Type: event.TypeMessage, Thread: "web:1", Text: "hello"})
	fmt.Println("append:", c.Append(ctx, 1, hello))
	other := event.Append(nil, &event.Event{Seq: 1, Time: at, Type: event.TypeMessage, Thread: "web:1", Text: "other"})
	fmt.Println("taken:", errors.Is(c.Append(ctx, 1, other), store.ErrSeqTaken))

	token, err := c.(store.Leaser).Lease(ctx, "turn-1", time.Minute)
	fmt.Println("lease:", token, err)
	_, err = c.(store.Leaser).Lease(ctx, "turn-2", time.Minute)
	fmt.Println("held:", errors.Is(err, store.ErrLeaseHeld))

	err = c.Read(ctx, 1, store.Forward, func(seq int64, b []byte) bool {
		fmt.Printf("%d %s\n", seq, b)
		return true
	})
	fmt.Println("read:", err)
	// Output:
	// append: <nil>
	// taken: true
	// lease: 1 <nil>
	// held: true
	// 1 {"seq":1,"time":"2026-12-03T09:00:00.000000000Z","type":"message","thread":"web:1","text":"hello"}
	// read: <nil>
}

// The wire a plugin program speaks on its standard input and output: one
// JSON-RPC request a line in, one answer a line out, a store's error as
// its code (see the package documentation). Serve is a plugin program's
// whole loop (Main runs it); here each call's line is read from a string,
// and its answer written to standard output.
func ExampleServe() {
	dir, err := os.MkdirTemp("", "lnk-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	d, err := sqlite.Open(filepath.Join(dir, sqlite.FileName))
	if err != nil {
		panic(err)
	}
	defer d.Close()

	for _, request := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"append","params":{"thread":"web:1","seq":1,"event":{"seq":1,"type":"message","thread":"web:1","text":"hello"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"last","params":{"thread":"web:1"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"read","params":{"thread":"web:1","from":1}}`,
		`{"jsonrpc":"2.0","id":4,"method":"compact","params":{"thread":"web:1"}}`,
	} {
		// Calls read at once run at once, and are answered in any order;
		// one at a time, each answer follows its request.
		if err := driver.Serve(context.Background(), d, strings.NewReader(request+"\n"), os.Stdout); err != nil {
			panic(err)
		}
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{}}
	// {"jsonrpc":"2.0","id":2,"result":{"last":1}}
	// {"jsonrpc":"2.0","id":3,"result":{"events":[{"seq":1,"type":"message","thread":"web:1","text":"hello"}],"more":false}}
	// {"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no method \"compact\": store: unsupported"}}
}
