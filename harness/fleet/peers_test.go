package fleet

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/loadgen/memory"
	"lnk.dev/linkharness/loadgen/scripted"
)

// peersEnv, set to a folder, makes the test binary serve as startPeers'
// child: the scripted model of noteScript and the memory tool server over
// that folder.
const peersEnv = "LNK_FLEET_TEST_PEERS"

// TestMain serves as startPeers' child when asked to.
func TestMain(m *testing.M) {
	if dir := os.Getenv(peersEnv); dir != "" {
		servePeers(dir)
		return
	}
	os.Exit(m.Run())
}

// noteScript has the model call memory__remember for a message saying
// "note", and answer "kept" once the tool answered.
func noteScript() *scripted.Script {
	return &scripted.Script{Rules: []scripted.Rule{
		{Match: "note", Results: "no", Calls: []scripted.Call{{Name: "memory__remember", Args: `{"note":"kept"}`}}},
		{Match: "any", Results: "yes", Text: "kept"},
	}}
}

// servePeers serves the scripted model of noteScript and the memory tool
// server over dir (streamable HTTP at /mcp), each on a loopback port,
// until its standard input closes, having written the model's address and
// the tool server's URL on one line.
func servePeers(dir string) {
	model, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tools, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpserver.NewStreamableHTTPServer(memory.New(dir, nil)))
	go http.Serve(model, scripted.New(noteScript()))
	go http.Serve(tools, mux)
	fmt.Println(model.Addr(), "http://"+tools.Addr().String()+"/mcp")
	io.Copy(io.Discard, os.Stdin)
}

// startPeers starts the scripted model and the memory tool server over
// dir in a process of their own, so that nothing they hold is counted as
// the agents', until the test ends; it returns the model's address and
// the tool server's URL.
func startPeers(t *testing.T, dir string) (modelAddr, memoryURL string) {
	t.Helper()
	line := fleettest.Peer(t, peersEnv+"="+dir)
	said := strings.Fields(line)
	if len(said) != 2 {
		t.Fatalf("the peers said %q", line)
	}
	return said[0], said[1]
}
