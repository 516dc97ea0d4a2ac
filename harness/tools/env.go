package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Server is one tool server the environment names.
type Server struct {
	Name string // as offered: memory, run, github, acme_memory
	URL  string

	// Timeout is the longest one call of the server may take, from
	// LNK_TOOL_<NAME>_TIMEOUT; 0 means the Set's Options.Call.
	Timeout time.Duration
}

// MaxTimeout is the longest LNK_TOOL_<NAME>_TIMEOUT taken.
const MaxTimeout = 24 * time.Hour

// own are the tool servers with a variable of their own, beside
// LNK_TOOL_<NAME>; their own variable wins over LNK_TOOL_<NAME>.
var own = map[string]string{
	"LNK_MEMORY":    "memory",
	"LNK_SCHEDULER": "scheduler",
	"LNK_RUN":       "run",
	"LNK_FILE":      "file",
	"LNK_CODE":      "code",
}

// FromEnviron finds the tool servers in env (as os.Environ gives it), in
// order of name. A name that cannot be offered (empty, holding "__" or a
// character outside [a-z0-9_-] once lower-cased) and an address that is not
// an http or https URL are left out; Skipped says why.
//
// LNK_TOOL_<NAME>_TIMEOUT, a duration ("90s", "10m"), is the longest one
// call of the server <name> may take (its Timeout). An address is never a
// duration, so a variable whose value is one is a timeout, never a server.
func FromEnviron(env []string) (servers []Server, skipped []string) {
	byName := map[string]Server{}
	ownSet := map[string]bool{}
	timeouts := map[string]time.Duration{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			continue
		}
		if name, ok := timeoutName(k); ok && !strings.Contains(v, "://") {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 || d > MaxTimeout {
				skipped = append(skipped, fmt.Sprintf("%s: %q is not a duration from 1ms to %v", k, v, MaxTimeout))
				continue
			}
			timeouts[name] = d
			continue
		}
		name, isOwn := own[k]
		if !isOwn {
			rest, ok := strings.CutPrefix(k, "LNK_TOOL_")
			if !ok {
				continue
			}
			name = strings.ToLower(rest)
		}
		if why := checkServer(name, v); why != "" {
			skipped = append(skipped, k+": "+why)
			continue
		}
		if ownSet[name] && !isOwn {
			continue
		}
		byName[name] = Server{Name: name, URL: v}
		if isOwn {
			ownSet[name] = true
		}
	}
	for _, s := range byName {
		s.Timeout = timeouts[s.Name]
		servers = append(servers, s)
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].Name < servers[j].Name })
	return servers, skipped
}

// timeoutName is the server a variable LNK_TOOL_<NAME>_TIMEOUT names.
func timeoutName(k string) (string, bool) {
	rest, ok := strings.CutPrefix(k, "LNK_TOOL_")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, "_TIMEOUT")
	return strings.ToLower(name), ok && name != ""
}

func checkServer(name, addr string) string {
	if name == "" || strings.Contains(name, "__") || len(name) > 40 {
		return "the name is empty, holds __, or is over 40 bytes"
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "the name holds " + string(c)
		}
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "the address is not an http or https URL"
	}
	return ""
}

// Kept tells whether a tool's session is kept between turns: memory's,
// run's, file's, code's, the scheduler's, the task and namespace servers'
// (which reach them) and a team's memory. Every other tool's session ends
// with its turn, since its state from one person's turn must not reach
// another's.
func Kept(name string) bool {
	switch name {
	case "memory", "run", "file", "code", "scheduler", "task", "namespace":
		return true
	}
	return strings.HasSuffix(name, "_memory")
}

// sse tells whether an address is spoken to over HTTP+SSE: its path ends
// in /sse.
func (s Server) sse() bool {
	u, err := url.Parse(s.URL)
	return err == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/sse")
}

// AddressHash is what tool-lists.json keeps of an address, which carries
// the proxy's secret: "sha256:" and the hex of its SHA-256.
func AddressHash(addr string) string {
	h := sha256.Sum256([]byte(addr))
	return "sha256:" + hex.EncodeToString(h[:])
}
