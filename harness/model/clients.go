package model

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Clients keeps a client a provider for the calls an environment names,
// so a call does not make its client again, nor the target and header its
// requests share (see target). A provider's client is made again when the
// environment names another base URL or key for it. The zero value is
// ready to use; it is safe for concurrent use.
type Clients struct {
	mu sync.Mutex
	// guarded by mu
	kept map[string]keptClient
}

// keptClient is a provider's client and what it was made from.
type keptClient struct {
	base, key string
	hc        *http.Client
	c         Client
}

// Get returns provider's client as New makes it, the one kept when the
// environment still names its base URL and key and hc is the same.
func (cs *Clients) Get(provider string, getenv func(string) string, hc *http.Client) (Client, error) {
	base, err := baseURL(provider, getenv)
	if err != nil {
		return nil, err
	}
	key := getenv("LNK_MODEL_PROXY_KEY")
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if k, ok := cs.kept[provider]; ok && k.base == base && k.key == key && k.hc == hc {
		return k.c, nil
	}
	c, err := newClient(provider, base, key, hc)
	if err != nil {
		return nil, err
	}
	if cs.kept == nil {
		cs.kept = make(map[string]keptClient, 1)
	}
	cs.kept[provider] = keptClient{base: base, key: key, hc: hc, c: c}
	return c, nil
}

// StallOf is how long a model's stream may go without a byte in the
// environment getenv reads: LNK_MODEL_STALL (a duration, "90s") when set,
// else DefaultStall.
func StallOf(getenv func(string) string) time.Duration {
	if d, err := time.ParseDuration(getenv("LNK_MODEL_STALL")); err == nil && d > 0 {
		return d
	}
	return DefaultStall
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
