package tools

import "fmt"

// ErrorType is the wire string that classifies a tool error (tools.md §1.4).
type ErrorType string

// General error types.
const (
	ErrorInvalidToolParams  ErrorType = "invalid_tool_params"
	errorUnknown            ErrorType = "unknown"
	ErrorUnhandledException ErrorType = "unhandled_exception"
	ErrorToolNotRegistered  ErrorType = "tool_not_registered"
	ErrorExecutionFailed    ErrorType = "execution_failed"
	ErrorExecutionDenied    ErrorType = "execution_denied"
	ErrorOutputTruncated    ErrorType = "output_truncated"
)

// File error types.
const (
	errorFileNotFound                ErrorType = "file_not_found"
	errorFileWriteFailure            ErrorType = "file_write_failure"
	errorReadContentFailure          ErrorType = "read_content_failure"
	errorAttemptToCreateExistingFile ErrorType = "attempt_to_create_existing_file"
	errorFileTooLarge                ErrorType = "file_too_large"
	errorPermissionDenied            ErrorType = "permission_denied"
	errorNoSpaceLeft                 ErrorType = "no_space_left"
	errorTargetIsDirectory           ErrorType = "target_is_directory"
	errorPathNotInWorkspace          ErrorType = "path_not_in_workspace"
	errorSearchPathNotFound          ErrorType = "search_path_not_found"
	errorSearchPathNotADirectory     ErrorType = "search_path_not_a_directory"
)

// Edit error types.
const (
	errorEditPreparationFailure         ErrorType = "edit_preparation_failure"
	errorEditNoOccurrenceFound          ErrorType = "edit_no_occurrence_found"
	errorEditExpectedOccurrenceMismatch ErrorType = "edit_expected_occurrence_mismatch"
	errorEditNoChange                   ErrorType = "edit_no_change"
	errorEditRequiresPriorRead          ErrorType = "edit_requires_prior_read"
	errorFileChangedSinceRead           ErrorType = "file_changed_since_read"
	errorPriorReadVerificationFailed    ErrorType = "prior_read_verification_failed"
)

// Error types of individual tools.
const (
	errorGlobExecution           ErrorType = "glob_execution_error"
	errorGrepExecution           ErrorType = "grep_execution_error"
	errorLsExecution             ErrorType = "ls_execution_error"
	errorPathIsNotADirectory     ErrorType = "path_is_not_a_directory"
	errorReadManyFilesSearch     ErrorType = "read_many_files_search_error"
	ErrorMCPTool                 ErrorType = "mcp_tool_error"
	errorMemoryToolExecution     ErrorType = "memory_tool_execution_error"
	errorShellExecute            ErrorType = "shell_execute_error"
	ErrorDiscoveredToolExecution ErrorType = "discovered_tool_execution_error"
	ErrorWebFetchFallbackFailed  ErrorType = "web_fetch_fallback_failed"
	ErrorWebFetchProcessing      ErrorType = "web_fetch_processing_error"
)

// ToolError is a failure the model can read and act on: its Message is
// exactly what the model sees (tools.md §1.2). It is deliberately not a Go
// error, so that "the call failed" and "the turn ended" never mix.
type ToolError struct {
	Message string    `json:"message"`
	Type    ErrorType `json:"type"`
}

// NewError returns a tool error of type t with the message msg.
func NewError(t ErrorType, msg string) *ToolError {
	return &ToolError{Message: msg, Type: t}
}

// Errorf returns a tool error of type t with a formatted message.
func Errorf(t ErrorType, format string, args ...any) *ToolError {
	return &ToolError{Message: fmt.Sprintf(format, args...), Type: t}
}

// InvalidParams returns an invalid_tool_params error, the usual answer of a
// tool's Validate.
func InvalidParams(msg string) *ToolError {
	return &ToolError{Message: msg, Type: ErrorInvalidToolParams}
}

// unexpected is the unhandled_exception error that a panic or a bug inside a
// tool becomes (tools.md §1.1).
func unexpected(text string) *ToolError {
	return &ToolError{
		Message: "The tool failed unexpectedly: " + text,
		Type:    ErrorUnhandledException,
	}
}
