package rpc

import (
	"encoding/json"
	"fmt"

	"github.com/sourcegraph/jsonrpc2"
)

// JSON-RPC and LSP error codes used by qwen-ls (protocol.md §8).
const (
	codeParseError           = jsonrpc2.CodeParseError     // -32700
	codeInvalidRequest       = jsonrpc2.CodeInvalidRequest // -32600
	codeMethodNotFound       = jsonrpc2.CodeMethodNotFound // -32601
	codeInvalidParams        = jsonrpc2.CodeInvalidParams  // -32602
	codeInternalError        = jsonrpc2.CodeInternalError  // -32603
	codeServerNotInitialized = -32002
	CodeNoModel              = -32000
	codeRequestCancelled     = -32800
	codeRequestFailed        = -32803
)

// rpcError builds a JSON-RPC error with a formatted message.
func rpcError(code int64, format string, args ...any) *jsonrpc2.Error {
	return &jsonrpc2.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// rpcErrorWithData builds a JSON-RPC error that carries a data object, such as
// {reason: "session_busy"}.
func rpcErrorWithData(code int64, data any, format string, args ...any) *jsonrpc2.Error {
	e := rpcError(code, format, args...)
	if raw, err := json.Marshal(data); err == nil {
		m := json.RawMessage(raw)
		e.Data = &m
	}
	return e
}

func invalidParams(method string, err error) *jsonrpc2.Error {
	return rpcError(codeInvalidParams, "invalid params for %s: %v", method, err)
}
