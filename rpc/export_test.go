package rpc

// The black-box tests (package rpc_test) check answers against the error
// codes and build errors the way handlers do; the rest of the module has
// no use for these names, so they are exported to the tests only.
const (
	CodeParseError           = codeParseError
	CodeInvalidRequest       = codeInvalidRequest
	CodeMethodNotFound       = codeMethodNotFound
	CodeInvalidParams        = codeInvalidParams
	CodeInternalError        = codeInternalError
	CodeServerNotInitialized = codeServerNotInitialized
	CodeRequestCancelled     = codeRequestCancelled
	CodeRequestFailed        = codeRequestFailed
)

var Error = rpcError
