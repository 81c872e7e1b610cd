package rpc

import (
	"encoding/json"
	"fmt"

	"github.com/sourcegraph/jsonrpc2"
)

// JSON-RPC and LSP error codes used by qwen-ls (protocol.md §8).
const (
	CodeParseError           = jsonrpc2.CodeParseError     // -32700
	CodeInvalidRequest       = jsonrpc2.CodeInvalidRequest // -32600
	CodeMethodNotFound       = jsonrpc2.CodeMethodNotFound // -32601
	CodeInvalidParams        = jsonrpc2.CodeInvalidParams  // -32602
	CodeInternalError        = jsonrpc2.CodeInternalError  // -32603
	CodeServerNotInitialized = -32002
	CodeNoModel              = -32000
	CodeRequestCancelled     = -32800
	CodeRequestFailed        = -32803
)

// Error builds a JSON-RPC error with a formatted message.
func Error(code int64, format string, args ...any) *jsonrpc2.Error {
	return &jsonrpc2.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorWithData builds a JSON-RPC error that carries a data object, such as
// {reason: "session_busy"}.
func ErrorWithData(code int64, data any, format string, args ...any) *jsonrpc2.Error {
	e := Error(code, format, args...)
	if raw, err := json.Marshal(data); err == nil {
		m := json.RawMessage(raw)
		e.Data = &m
	}
	return e
}

func invalidParams(method string, err error) *jsonrpc2.Error {
	return Error(CodeInvalidParams, "invalid params for %s: %v", method, err)
}
