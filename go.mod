module lnk.dev/linkharness

go 1.26.0

require (
	github.com/chzyer/readline v1.5.1 // indirect
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b // indirect
	github.com/ianlancetaylor/demangle v0.0.0-20250417193237-f615e6bd150b // indirect
	github.com/pelletier/go-toml/v2 v2.4.3 // indirect
	github.com/prometheus/procfs v0.23.0 // indirect
	github.com/valyala/fastjson v1.6.10 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
