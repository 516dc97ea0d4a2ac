package model

import "lnk.dev/linkharness/harness/internal/h1"

// Transport is the RoundTripper a model client is meant to call its proxy
// through: HTTP/1.1 written and read on the calling turn's goroutine, so a
// kept connection costs no goroutine and a call no hand-off between
// goroutines; a bounded idle pool, expired when next looked at, and a
// request sent again once when a kept connection turns out closed before
// any answer (see harness/internal/h1). Its zero value is usable; main
// builds it, as &http.Client{Transport: &model.Transport{…}}.
type Transport = h1.Transport
