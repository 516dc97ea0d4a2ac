package model

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Clients keeps the model clients of a process's agents, one for each
// provider, base URL, key and http.Client their environments name, so a
// call does not make its client again, nor the target and header its
// requests share (see target): the agents of a process that share a
// model proxy share a client. It keeps at most maxClients, let go of all
// at once past that. The zero value is ready to use; a nil *Clients keeps
// none, and Get is New. It is safe for concurrent use.
type Clients struct {
	mu sync.Mutex
	// guarded by mu
	kept map[clientKey]Client
}

// clientKey is what a client is made from.
type clientKey struct {
	provider, base, key string
	hc                  *http.Client
}

// maxClients bounds the clients kept: one for each proxy and key the
// agents' environments name, which a process has a few of.
const maxClients = 64

// Get returns provider's client as New makes it, for the environment
// getenv reads, the one kept when one was made for the same base URL, key
// and hc.
func (cs *Clients) Get(provider string, getenv func(string) string, hc *http.Client) (Client, error) {
	if cs == nil {
		return New(provider, getenv, hc)
	}
	base, err := baseURL(provider, getenv)
	if err != nil {
		return nil, err
	}
	k := clientKey{provider: provider, base: base, key: getenv("LNK_MODEL_PROXY_KEY"), hc: hc}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.kept[k]; ok {
		return c, nil
	}
	c, err := newClient(provider, base, k.key, hc)
	if err != nil {
		return nil, err
	}
	if cs.kept == nil || len(cs.kept) >= maxClients {
		cs.kept = make(map[clientKey]Client, 1)
	}
	cs.kept[k] = c
	return c, nil
}

// target is where a client's calls go, parsed once, and the header they
// carry, made once: every call's request shares the two, and nothing that
// sends a request changes them (an http.RoundTripper must not).
type target struct {
	once   sync.Once
	url    *url.URL
	header http.Header
	err    error
}

// get returns t, made by make the first time: the URL to parse and the
// header.
func (t *target) get(make func() (string, http.Header)) (*url.URL, http.Header, error) {
	t.once.Do(func() {
		raw, h := make()
		t.url, t.err = url.Parse(raw)
		if t.err == nil {
			t.url.Host = strings.TrimSuffix(t.url.Host, ":") // as http.NewRequest: an empty port is none
		}
		t.header = h
	})
	return t.url, t.header, t.err
}
