module github.com/agentcore/sessionlog

go 1.26.8

require (
	github.com/go-json-experiment/json v1.27.2
	github.com/vmihailenco/msgpack/v5 v5.4.1
)

require github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
