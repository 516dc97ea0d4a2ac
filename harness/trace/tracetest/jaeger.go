package tracetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// JaegerEnv names the Jaeger binary the tests run. .ci/run builds it from
// tools/jaeger and sets it.
const JaegerEnv = "LNK_TEST_JAEGER"

// startLimit bounds how long Jaeger may take to say it is ready; it says
// so in well under a second on an idle machine.
const startLimit = 2 * time.Minute

// ready is the line the OpenTelemetry collector Jaeger is built on logs
// once every extension and pipeline has started.
const ready = "Everything is ready"

// Jaeger is a Jaeger all-in-one process of a test's own, on free ports of
// loopback, keeping spans in memory. It is stopped when the test ends.
type Jaeger struct {
	OTLP  string // the OTLP/HTTP receiver's base URL: OTEL_EXPORTER_OTLP_ENDPOINT
	Query string // the query service's base URL
}

// StartJaeger starts Jaeger and returns once it is ready: it logged so,
// and its health check answers 200. Without LNK_TEST_JAEGER the test is
// skipped, except in CI (CI=true), where it fails.
func StartJaeger(tb testing.TB) *Jaeger {
	tb.Helper()
	bin := os.Getenv(JaegerEnv)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not set: CI must build Jaeger (see .ci/run)", JaegerEnv)
		}
		tb.Skipf("%s is not set: no Jaeger to test against (go -C tools/jaeger build -o BIN github.com/jaegertracing/jaeger/cmd/jaeger)", JaegerEnv)
	}
	config, err := configFile()
	if err != nil {
		tb.Fatal(err)
	}
	ports := freePorts(tb, 4)
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	cmd := exec.Command(bin, "--config", config)
	cmd.Env = append(os.Environ(),
		"LNK_JAEGER_OTLP_HTTP="+addr(0), "LNK_JAEGER_QUERY_HTTP="+addr(1),
		"LNK_JAEGER_QUERY_GRPC="+addr(2), "LNK_JAEGER_HEALTH="+addr(3))
	logs := &tail{}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout = logs
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start jaeger %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	isReady := make(chan struct{})
	go func() {
		watch(stderr, logs, isReady)
		exited <- cmd.Wait()
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	timer := time.NewTimer(startLimit)
	defer timer.Stop()
	select {
	case <-isReady:
	case err := <-exited:
		exited <- err
		tb.Fatalf("jaeger exited before it was ready (%v); its log:\n%s", err, logs)
	case <-timer.C:
		tb.Fatalf("jaeger not ready after %v; its log:\n%s", startLimit, logs)
	}
	resp, err := http.Get("http://" + addr(3) + "/status")
	if err != nil {
		tb.Fatalf("jaeger's health: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !healthy(resp.StatusCode, body) {
		tb.Fatalf("jaeger's health: %s %s", resp.Status, body)
	}
	return &Jaeger{OTLP: "http://" + addr(0), Query: "http://" + addr(1)}
}

// Trace reads the trace of id (hex) back through the query API,
// /api/traces/{id}; a trace Jaeger does not hold fails the test.
func (j *Jaeger) Trace(tb testing.TB, id string) []Span {
	tb.Helper()
	resp, err := http.Get(j.Query + "/api/traces/" + id)
	if err != nil {
		tb.Fatalf("read trace %s: %v", id, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read trace %s: %v", id, err)
	}
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("read trace %s: %s %s", id, resp.Status, body)
	}
	spans, err := decodeTrace(body)
	if err != nil {
		tb.Fatalf("read trace %s: %v in %s", id, err, body)
	}
	return spans
}

// apiTrace is the part of the query API's answer that Trace reads: Jaeger's
// own JSON model, where a span's parent is its CHILD_OF reference, and its
// kind, status and tracestate are tags.
type apiTrace struct {
	Data []struct {
		Spans []struct {
			TraceID       string `json:"traceID"`
			SpanID        string `json:"spanID"`
			OperationName string `json:"operationName"`
			References    []struct {
				RefType string `json:"refType"`
				SpanID  string `json:"spanID"`
			} `json:"references"`
			Tags []struct {
				Key   string          `json:"key"`
				Type  string          `json:"type"`
				Value json.RawMessage `json:"value"`
			} `json:"tags"`
		} `json:"spans"`
	} `json:"data"`
	Errors []struct {
		Msg string `json:"msg"`
	} `json:"errors"`
}

// decodeTrace turns the query API's answer into Spans.
func decodeTrace(body []byte) ([]Span, error) {
	var t apiTrace
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, err
	}
	if len(t.Errors) > 0 {
		return nil, fmt.Errorf("jaeger: %s", t.Errors[0].Msg)
	}
	var spans []Span
	for _, d := range t.Data {
		for _, s := range d.Spans {
			sp := Span{TraceID: s.TraceID, ID: s.SpanID, Name: s.OperationName, Kind: "internal", Attrs: map[string]string{}}
			for _, r := range s.References {
				if r.RefType == "CHILD_OF" {
					sp.Parent = r.SpanID
				}
			}
			for _, tag := range s.Tags {
				v := string(tag.Value)
				if tag.Type == "string" {
					if err := json.Unmarshal(tag.Value, &v); err != nil {
						return nil, fmt.Errorf("tag %s: %v", tag.Key, err)
					}
				}
				switch tag.Key {
				case "span.kind":
					sp.Kind = v
				case "otel.status_code":
					sp.Error = v == "ERROR"
				case "w3c.tracestate":
					sp.State = v
				case "error", "otel.scope.name", "otel.scope.version", "internal.span.format":
				default:
					sp.Attrs[tag.Key] = v
				}
			}
			spans = append(spans, sp)
		}
	}
	return spans, nil
}

// configFile finds tools/jaeger/jaeger.yaml in the module the test runs
// in, from the test's folder up.
func configFile() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "tools", "jaeger", "jaeger.yaml")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("tools/jaeger/jaeger.yaml not found above the test's folder")
		}
		dir = up
	}
}

// freePorts returns n ports of loopback free a moment ago. Another process
// may take one before Jaeger does; Jaeger then exits saying so.
func freePorts(tb testing.TB, n int) []int {
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		defer ln.Close()
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// watch copies Jaeger's log to logs, closing isReady at the line that
// says it is ready, until the log ends.
func watch(r io.Reader, logs *tail, isReady chan<- struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	said := false
	for sc.Scan() {
		line := sc.Bytes()
		logs.Write(append(line, '\n'))
		if !said && bytes.Contains(line, []byte(ready)) {
			said = true
			close(isReady)
		}
	}
	_, _ = io.Copy(logs, r)
}

// healthy says whether Jaeger's health check answered healthy: 200, or
// 503 saying healthy while its status is still "StatusStarting", which it
// may be for a moment after it logged it is ready (its components' status
// reaches the check after they started).
func healthy(code int, body []byte) bool {
	var h struct {
		Healthy bool   `json:"healthy"`
		Status  string `json:"status"`
	}
	if code == http.StatusOK {
		return true
	}
	return code == http.StatusServiceUnavailable && json.Unmarshal(body, &h) == nil && h.Healthy && h.Status == "StatusStarting"
}

// tail keeps the last tailBytes of a process's output, for a failure to
// show. It is safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 32 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = t.buf[len(t.buf)-tailBytes:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
