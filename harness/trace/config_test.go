package trace

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// env is a getenv of the variables given as NAME=value.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for _, p := range kv {
		k, v, _ := strings.Cut(p, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func TestReadOnOff(t *testing.T) {
	cases := []struct {
		env []string
		on  bool
		url string
	}{
		{nil, false, "http://localhost:4318/v1/traces"},
		{[]string{"OTEL_SERVICE_NAME=x", "OTEL_TRACES_SAMPLER=always_on"}, false, "http://localhost:4318/v1/traces"},
		{[]string{"OTEL_TRACES_EXPORTER=otlp"}, true, "http://localhost:4318/v1/traces"},
		{[]string{"OTEL_TRACES_EXPORTER=none", "OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318"}, false, "http://c:4318/v1/traces"},
		{[]string{"OTEL_SDK_DISABLED=true", "OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318"}, false, "http://c:4318/v1/traces"},
		{[]string{"OTEL_SDK_DISABLED=false", "OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318"}, true, "http://c:4318/v1/traces"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318/"}, true, "http://c:4318/v1/traces"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=https://c/otlp"}, true, "https://c/otlp/v1/traces"},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://c:4318/spans"}, true, "http://c:4318/spans"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://a", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://b/t"}, true, "http://b/t"},
	}
	for _, c := range cases {
		s, err := read(env(c.env...))
		if err != nil {
			t.Errorf("%v: %v", c.env, err)
			continue
		}
		if s.on != c.on || s.url != c.url {
			t.Errorf("%v: on %v url %s, want %v %s", c.env, s.on, s.url, c.on, c.url)
		}
	}
}

func TestReadValues(t *testing.T) {
	s, err := read(env(
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318",
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20k1, x-team = a%2Cb",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS=x-only=traces",
		"OTEL_EXPORTER_OTLP_TIMEOUT=2500",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=gzip",
		"OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_BSP_MAX_QUEUE_SIZE=64",
		"OTEL_SERVICE_NAME=front",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=prod,service.name=ignored",
	))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"x-only": "traces"}; !reflect.DeepEqual(s.headers, want) {
		t.Errorf("headers %v, want the traces' own %v", s.headers, want)
	}
	if s.timeout != 2500*time.Millisecond || !s.gzip || s.delay != 100*time.Millisecond || s.queue != 64 || s.batch != 64 {
		t.Errorf("timeout %v gzip %v delay %v queue %d batch %d", s.timeout, s.gzip, s.delay, s.queue, s.batch)
	}
	if s.service != "front" || s.resourceRaw["deployment.environment.name"] != "prod" {
		t.Errorf("service %q resource %v", s.service, s.resourceRaw)
	}
	s, _ = read(env("OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20k1, x-team = a%2Cb"))
	if want := map[string]string{"authorization": "Bearer k1", "x-team": "a,b"}; !reflect.DeepEqual(s.headers, want) {
		t.Errorf("headers %v, want %v", s.headers, want)
	}
	if s.service != ServiceName || s.timeout != 10*time.Second || s.gzip {
		t.Errorf("defaults: service %q timeout %v gzip %v", s.service, s.timeout, s.gzip)
	}
}

// Each variable a mistake can be made in is refused saying which, and a
// header's value, which may be a key, is never repeated.
func TestReadRefuses(t *testing.T) {
	cases := []struct {
		env  string
		want error
	}{
		{"OTEL_TRACES_EXPORTER=console", ErrUnsupported},
		{"OTEL_TRACES_EXPORTER=otlp,console", ErrUnsupported},
		{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", ErrUnsupported},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json", ErrUnsupported},
		{"OTEL_EXPORTER_OTLP_ENDPOINT=collector:4318", ErrSetting},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=ftp://u:secret@c/", ErrSetting},
		{"OTEL_EXPORTER_OTLP_HEADERS=authorization", ErrSetting},
		{"OTEL_EXPORTER_OTLP_HEADERS=authorization=secret%zz", ErrSetting},
		{"OTEL_EXPORTER_OTLP_TIMEOUT=10s", ErrSetting},
		{"OTEL_EXPORTER_OTLP_COMPRESSION=zstd", ErrUnsupported},
		{"OTEL_EXPORTER_OTLP_CLIENT_KEY=k.pem", ErrSetting},
		{"OTEL_TRACES_SAMPLER=jaeger_remote", ErrUnsupported},
		{"OTEL_TRACES_SAMPLER=traceidratio OTEL_TRACES_SAMPLER_ARG=2", ErrSetting},
		{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE=0", ErrSetting},
		{"OTEL_BSP_EXPORT_TIMEOUT=-1", ErrSetting},
		{"OTEL_SDK_DISABLED=yes", ErrSetting},
		{"OTEL_RESOURCE_ATTRIBUTES==x", ErrSetting},
	}
	for _, c := range cases {
		_, err := read(env(strings.Fields(c.env)...))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.env, err, c.want)
			continue
		}
		name, _, _ := strings.Cut(strings.Fields(c.env)[len(strings.Fields(c.env))-1], "=")
		if !strings.Contains(err.Error(), strings.TrimPrefix(name, "OTEL_EXPORTER_OTLP_")) {
			t.Errorf("%s: %q does not name the variable", c.env, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %q repeats a secret", c.env, err)
		}
	}
}

func TestSampler(t *testing.T) {
	cases := []struct{ name, arg, want string }{
		{"", "", "ParentBased{root:AlwaysOnSampler,"},
		{"parentbased_always_off", "", "ParentBased{root:AlwaysOffSampler,"},
		{"always_on", "", "AlwaysOnSampler"},
		{"ALWAYS_OFF", "", "AlwaysOffSampler"},
		{"traceidratio", "0.25", "TraceIDRatioBased{0.25}"},
		{"traceidratio", "", "TraceIDRatioBased{1}"},
		{"parentbased_traceidratio", "0.5", "ParentBased{root:TraceIDRatioBased{0.5},"},
	}
	for _, c := range cases {
		s, err := sampler(c.name, c.arg)
		if err != nil {
			t.Errorf("%s %s: %v", c.name, c.arg, err)
			continue
		}
		if got := s.Description(); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s: %s, want %s…", c.name, c.arg, got, c.want)
		}
	}
}
