package trace

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Errors New returns, wrapped with the variable that held the value; test
// them with errors.Is.
var (
	// ErrSetting comes when an OTEL_* variable holds what it cannot mean: a
	// URL that is not one, a number that is not, a header list without its
	// '='. A header's value is never repeated in the error, since headers
	// carry keys.
	ErrSetting = errors.New("trace: bad setting")

	// ErrUnsupported comes when an OTEL_* variable asks for what the
	// harness does not do: an exporter other than otlp, a protocol other
	// than http/protobuf, a sampler other than the built-in ones.
	ErrUnsupported = errors.New("trace: unsupported setting")
)

// ServiceName is the service.name of the harness's spans when
// OTEL_SERVICE_NAME does not say another.
const ServiceName = "lnk-link-harness"

// defaultEndpoint is where spans go when OTEL_TRACES_EXPORTER=otlp names no
// endpoint: a collector on the machine, as the OTLP specification says.
const defaultEndpoint = "http://localhost:4318"

// settings is what the OTEL_* variables say, before anything is built.
type settings struct {
	on          bool
	url         string            // where spans are posted
	headers     map[string]string // sent with every export
	timeout     time.Duration     // of one export
	gzip        bool
	ca          string // PEM files; empty: not said
	cert, key   string
	sampler     sdktrace.Sampler
	delay       time.Duration // the batch processor's
	export      time.Duration
	queue       int
	batch       int
	service     string
	resourceRaw map[string]string // OTEL_RESOURCE_ATTRIBUTES
}

// read returns what the OTEL_* variables getenv holds say. Every value is
// checked, even when tracing is off, so a mistake is found when it is
// made and not when tracing is first turned on.
func read(getenv func(string) string) (settings, error) {
	s := settings{service: ServiceName, timeout: 10 * time.Second}
	var err error
	exporter := strings.TrimSpace(strings.ToLower(getenv("OTEL_TRACES_EXPORTER")))
	switch exporter {
	case "", "otlp", "none":
	default:
		return s, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q: only otlp or none", ErrUnsupported, exporter)
	}
	if s.url, err = endpoint(getenv); err != nil {
		return s, err
	}
	disabled, err := boolean(getenv, "OTEL_SDK_DISABLED")
	if err != nil {
		return s, err
	}
	named := s.url != ""
	s.on = !disabled && exporter != "none" && (exporter == "otlp" || named)
	if !named {
		s.url = defaultEndpoint + "/v1/traces"
	}
	name, proto := traces(getenv, "PROTOCOL")
	switch proto {
	case "", "http/protobuf":
	default:
		return s, fmt.Errorf("%w: %s=%q: only http/protobuf", ErrUnsupported, name, proto)
	}
	name, raw := traces(getenv, "HEADERS")
	if s.headers, err = pairs(raw); err != nil {
		return s, fmt.Errorf("%w: %s: %v", ErrSetting, name, err)
	}
	name, raw = traces(getenv, "TIMEOUT")
	if s.timeout, err = millis(name, raw, s.timeout); err != nil {
		return s, err
	}
	name, comp := traces(getenv, "COMPRESSION")
	switch comp {
	case "", "none":
	case "gzip":
		s.gzip = true
	default:
		return s, fmt.Errorf("%w: %s=%q: only gzip or none", ErrUnsupported, name, comp)
	}
	_, s.ca = traces(getenv, "CERTIFICATE")
	_, s.cert = traces(getenv, "CLIENT_CERTIFICATE")
	_, s.key = traces(getenv, "CLIENT_KEY")
	if (s.cert == "") != (s.key == "") {
		return s, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY go together", ErrSetting)
	}
	if s.sampler, err = sampler(getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		return s, err
	}
	if err = s.readBatch(getenv); err != nil {
		return s, err
	}
	if v := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); v != "" {
		s.service = v
	}
	if s.resourceRaw, err = pairs(getenv("OTEL_RESOURCE_ATTRIBUTES")); err != nil {
		return s, fmt.Errorf("%w: OTEL_RESOURCE_ATTRIBUTES: %v", ErrSetting, err)
	}
	return s, nil
}

// readBatch reads the batch processor's OTEL_BSP_* variables, each
// defaulting to the SDK's own default.
func (s *settings) readBatch(getenv func(string) string) error {
	const delay, export = "OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT"
	const queue, batch = "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"
	var err error
	if s.delay, err = millis(delay, getenv(delay), sdktrace.DefaultScheduleDelay*time.Millisecond); err != nil {
		return err
	}
	if s.export, err = millis(export, getenv(export), sdktrace.DefaultExportTimeout*time.Millisecond); err != nil {
		return err
	}
	if s.queue, err = count(queue, getenv(queue), sdktrace.DefaultMaxQueueSize); err != nil {
		return err
	}
	if s.batch, err = count(batch, getenv(batch), sdktrace.DefaultMaxExportBatchSize); err != nil {
		return err
	}
	if s.batch > s.queue {
		s.batch = s.queue // as the SDK does
	}
	return nil
}

// endpoint returns the URL spans are posted to, or "" when neither
// endpoint variable is set: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is,
// else OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces added to its path.
func endpoint(getenv func(string) string) (string, error) {
	name, raw := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	signal := raw != ""
	if !signal {
		name, raw = "OTEL_EXPORTER_OTLP_ENDPOINT", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is not repeated: it may hold a user and password.
		return "", fmt.Errorf("%w: %s: not an http or https URL", ErrSetting, name)
	}
	if !signal {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

// traces returns the trace exporter's variable OTEL_EXPORTER_OTLP_TRACES_<what>
// and its value when set, else OTEL_EXPORTER_OTLP_<what> and its value.
func traces(getenv func(string) string, what string) (name, value string) {
	name = "OTEL_EXPORTER_OTLP_TRACES_" + what
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return name, v
	}
	name = "OTEL_EXPORTER_OTLP_" + what
	return name, strings.TrimSpace(getenv(name))
}

// pairs parses a list of key=value pairs separated by commas, as
// OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES hold them, each
// value percent-decoded. The error names the pair by its place and key,
// never by its value.
func pairs(raw string) (map[string]string, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	m := make(map[string]string)
	for i, p := range strings.Split(raw, ",") {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("pair %d is not key=value", i+1)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("the value of %q is not percent-encoded", k)
		}
		m[k] = dv
	}
	return m, nil
}

// millis reads a whole number of milliseconds from raw, the value of the
// variable name, or def when it is not set.
func millis(name, raw string, def time.Duration) (time.Duration, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s=%q: not a whole number of milliseconds", ErrSetting, name, raw)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// count reads a positive whole number from raw, the value of the variable
// name, or def when it is not set.
func count(name, raw string, def int) (int, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %s=%q: not a positive whole number", ErrSetting, name, raw)
	}
	return n, nil
}

// boolean reads true or false (any case) from the variable name; not set
// is false.
func boolean(getenv func(string) string, name string) (bool, error) {
	switch raw := strings.ToLower(strings.TrimSpace(getenv(name))); raw {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, fmt.Errorf("%w: %s=%q: true or false", ErrSetting, name, raw)
	}
}

// sampler returns the sampler OTEL_TRACES_SAMPLER names, with its
// OTEL_TRACES_SAMPLER_ARG; not set is parentbased_always_on, so a caller
// that sampled its trace out keeps the harness's spans out too.
func sampler(name, arg string) (sdktrace.Sampler, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	ratio := func() (sdktrace.Sampler, error) {
		arg = strings.TrimSpace(arg)
		if arg == "" {
			return sdktrace.TraceIDRatioBased(1), nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("%w: OTEL_TRACES_SAMPLER_ARG=%q: a ratio from 0 to 1", ErrSetting, arg)
		}
		return sdktrace.TraceIDRatioBased(r), nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return ratio()
	case "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(r), nil
	default:
		return nil, fmt.Errorf("%w: OTEL_TRACES_SAMPLER=%q", ErrUnsupported, name)
	}
}
