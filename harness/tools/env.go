package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sort"
	"strings"
)

// Server is one tool server the environment names.
type Server struct {
	Name string // as offered: memory, run, github, acme_memory
	URL  string
}

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
func FromEnviron(env []string) (servers []Server, skipped []string) {
	byName := map[string]Server{}
	ownSet := map[string]bool{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
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
		servers = append(servers, s)
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].Name < servers[j].Name })
	return servers, skipped
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
