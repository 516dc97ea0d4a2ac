package fleet

import (
	"net"
	"syscall"
	"testing"
)

// TestListenNoProbes checks an agent's connections carry no TCP keep-alive
// probes: the system calls that set them are not made.
func TestListenNoProbes(t *testing.T) {
	ln, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	rc, err := sc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	on, serr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { on, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	if on != 0 {
		t.Errorf("SO_KEEPALIVE is %d on an accepted connection, want 0", on)
	}
}
