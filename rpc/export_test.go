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

// The test methods (test/block, test/text, test/panic) are added to a
// server through Options.
type (
	Method  = method
	Request = request
)

// WithMethods returns opts with the extra methods m.
func WithMethods(opts Options, m map[string]Method) Options {
	opts.extraMethods = m
	return opts
}
