package server

import (
	"net/url"
	"path/filepath"
	"strings"
)

// What an error body says in place of what it must not say.
const (
	saidHome  = "<home>"
	saidProxy = "<model proxy>"
)

// redact returns msg, an error as an answer gives it to the caller,
// without the agent's home folder (said as <home>, so a path in it reads
// relative to the home) and without the model proxies' addresses (said as
// <model proxy>): the caller is told what failed, never where the agent
// lives on its machine or what its proxy is. The log keeps them in full.
// A proxy's host alone is taken out only when it has a port or a dot, so a
// bare host name is not taken out of the words around it.
func redact(msg, home string, proxies []string) string {
	if home != "" {
		if home = filepath.Clean(home); home != "/" && home != "." {
			msg = strings.ReplaceAll(msg, home, saidHome)
		}
	}
	for _, p := range proxies {
		if p = strings.TrimRight(p, "/"); p == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, p, saidProxy)
		if u, err := url.Parse(p); err == nil && strings.ContainsAny(u.Host, ":.") {
			msg = strings.ReplaceAll(msg, u.Host, saidProxy)
		}
	}
	return msg
}

// proxyEnv names the variables that may hold a model proxy's address.
var proxyEnv = []string{
	"LNK_MODEL_PROXY",
	"LNK_MODEL_PROXY_ANTHROPIC",
	"LNK_MODEL_PROXY_OPENAI",
	"LNK_MODEL_PROXY_OPENROUTER",
	"LNK_MODEL_PROXY_OLLAMA",
}

// said is msg as agent's caller is told it (see redact).
func (s *Server) said(agent, msg string) string {
	a := s.agent(agent)
	if a == nil || a.Runner == nil {
		return msg
	}
	var proxies []string
	if getenv := a.Runner.Getenv; getenv != nil {
		for _, name := range proxyEnv {
			if v := getenv(name); v != "" {
				proxies = append(proxies, v)
			}
		}
	}
	return redact(msg, a.Runner.Agent.Dir, proxies)
}
