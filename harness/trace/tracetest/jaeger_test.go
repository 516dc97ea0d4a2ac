package tracetest

import "testing"

// Jaeger's health is taken as healthy when it says so: 200, or 503 while
// its status is still starting though healthy, as it may be a moment after
// it logged it is ready.
func TestHealthy(t *testing.T) {
	for _, c := range []struct {
		code int
		body string
		want bool
	}{
		{200, `{"healthy":true,"status":"StatusOK"}`, true},
		{200, ``, true},
		{503, `{"start_time":"2026-12-04T15:35:31Z","healthy":true,"status":"StatusStarting"}`, true},
		{503, `{"healthy":false,"status":"StatusStarting"}`, false},
		{503, `{"healthy":true,"status":"StatusPermanentError"}`, false},
		{503, `not json`, false},
		{500, `{"healthy":true,"status":"StatusStarting"}`, false},
	} {
		if got := healthy(c.code, []byte(c.body)); got != c.want {
			t.Errorf("healthy(%d, %s) = %v, want %v", c.code, c.body, got, c.want)
		}
	}
}
