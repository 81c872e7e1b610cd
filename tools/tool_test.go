package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

func TestKinds(t *testing.T) {
	readOnly := map[tools.Kind]bool{
		tools.KindRead: true, tools.KindSearch: true, tools.KindFetch: true,
		tools.KindEdit: false, tools.KindDelete: false, tools.KindMove: false,
		tools.KindExecute: false, tools.KindThink: false, tools.KindOther: false,
	}
	wire := map[tools.Kind]string{
		tools.KindRead: "read", tools.KindEdit: "edit", tools.KindDelete: "delete", tools.KindMove: "move",
		tools.KindSearch: "search", tools.KindExecute: "execute", tools.KindThink: "think",
		tools.KindFetch: "fetch", tools.KindOther: "other",
	}
	for k, want := range readOnly {
		if k.ReadOnly() != want {
			t.Errorf("%s.ReadOnly() = %v", k, !want)
		}
		if !k.Valid() {
			t.Errorf("%s not valid", k)
		}
		if string(k) != wire[k] {
			t.Errorf("kind %q, want %q", k, wire[k])
		}
	}
	if tools.Kind("write").Valid() {
		t.Error(`"write" is valid`)
	}
}

// errorTypes are the wire strings of tools.md §1.4, in the order that
// section lists them.
var errorTypes = []tools.ErrorType{
	tools.ErrorInvalidToolParams, tools.ErrorUnknown, tools.ErrorUnhandledException, tools.ErrorToolNotRegistered,
	tools.ErrorExecutionFailed, tools.ErrorExecutionDenied, tools.ErrorOutputTruncated,
	tools.ErrorFileNotFound, tools.ErrorFileWriteFailure, tools.ErrorReadContentFailure,
	tools.ErrorAttemptToCreateExistingFile, tools.ErrorFileTooLarge, tools.ErrorPermissionDenied,
	tools.ErrorNoSpaceLeft, tools.ErrorTargetIsDirectory, tools.ErrorPathNotInWorkspace,
	tools.ErrorSearchPathNotFound, tools.ErrorSearchPathNotADirectory,
	tools.ErrorEditPreparationFailure, tools.ErrorEditNoOccurrenceFound,
	tools.ErrorEditExpectedOccurrenceMismatch, tools.ErrorEditNoChange, tools.ErrorEditRequiresPriorRead,
	tools.ErrorFileChangedSinceRead, tools.ErrorPriorReadVerificationFailed,
	tools.ErrorGlobExecution, tools.ErrorGrepExecution, tools.ErrorLsExecution, tools.ErrorPathIsNotADirectory,
	tools.ErrorReadManyFilesSearch, tools.ErrorMCPTool, tools.ErrorMemoryToolExecution, tools.ErrorShellExecute,
	tools.ErrorDiscoveredToolExecution, tools.ErrorWebFetchFallbackFailed, tools.ErrorWebFetchProcessing,
}

func TestErrorTypesAreTheSpecWireStrings(t *testing.T) {
	// tools.md §1.4, in its order.
	want := "invalid_tool_params unknown unhandled_exception tool_not_registered execution_failed " +
		"execution_denied output_truncated file_not_found file_write_failure read_content_failure " +
		"attempt_to_create_existing_file file_too_large permission_denied no_space_left " +
		"target_is_directory path_not_in_workspace search_path_not_found search_path_not_a_directory " +
		"edit_preparation_failure edit_no_occurrence_found edit_expected_occurrence_mismatch " +
		"edit_no_change edit_requires_prior_read file_changed_since_read prior_read_verification_failed " +
		"glob_execution_error grep_execution_error ls_execution_error path_is_not_a_directory " +
		"read_many_files_search_error mcp_tool_error memory_tool_execution_error shell_execute_error " +
		"discovered_tool_execution_error web_fetch_fallback_failed web_fetch_processing_error"
	var got []string
	for _, e := range errorTypes {
		got = append(got, string(e))
	}
	if strings.Join(got, " ") != want {
		t.Errorf("error types\n got: %s\nwant: %s", strings.Join(got, " "), want)
	}
}

func TestBaseDefaults(t *testing.T) {
	f := toolstest.NewFake("x", "")
	f.Spec.Aliases = []string{"y"}
	f.Spec.StreamsOutput = true
	if f.Source() != tools.SourceBuiltin {
		t.Errorf("default source %q", f.Source())
	}
	f.Spec.Source = tools.MCPSource("srv")
	if f.Source() != "mcp:srv" {
		t.Errorf("source %q", f.Source())
	}
	if f.Name() != "x" || f.DisplayName() != "x" || f.Kind() != tools.KindOther || !f.StreamsOutput() ||
		len(f.Aliases()) != 1 || f.SkipSchemaValidation() {
		t.Errorf("static methods do not reflect the spec: %+v", f.Spec)
	}
	if f.Validate(nil) != nil || f.Locations(nil) != nil {
		t.Error("Validate or Locations not empty by default")
	}
	if c, e := f.ShouldConfirm(context.Background(), &tools.Call{}, nil); c != nil || e != nil {
		t.Error("ShouldConfirm asks by default")
	}
	if first, again := f.ArgsSchema(), f.ArgsSchema(); first == nil || first != again {
		t.Error("schema not compiled once")
	}
	broken := toolstest.NewFake("b", `{"type":1}`)
	if broken.ArgsSchema() != nil {
		t.Error("a broken schema compiled")
	}
}

func TestGuardRecoversPanics(t *testing.T) {
	tests := []struct {
		name  string
		value any
		want  string
	}{
		{"string", "index out of range", "The tool failed unexpectedly: index out of range"},
		{"error", errors.New("nil map"), "The tool failed unexpectedly: nil map"},
		{"other", 42, "The tool failed unexpectedly: 42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := toolstest.NewFake("x", "")
			f.ExecuteFunc = func(context.Context, *tools.Call, map[string]any, func(tools.Output)) (tools.Result, error) {
				panic(tt.value)
			}
			res, err := tools.Guard(context.Background(), f, &tools.Call{ID: "c1"}, nil, nil)
			if err != nil {
				t.Fatalf("Go error %v; a panic must not end the turn", err)
			}
			if res.Error == nil || res.Error.Type != tools.ErrorUnhandledException || res.Error.Message != tt.want {
				t.Errorf("result error %+v", res.Error)
			}
		})
	}
}

func TestGuardPassesResultsAndErrorsThrough(t *testing.T) {
	f := toolstest.NewFake("x", "")
	var outputs []string
	f.ExecuteFunc = func(ctx context.Context, call *tools.Call, params map[string]any, onOutput func(tools.Output)) (tools.Result, error) {
		onOutput(tools.Output{Text: "a"})
		onOutput(tools.Output{Text: "ab"})
		if err := ctx.Err(); err != nil {
			return tools.Result{}, err
		}
		return tools.TextResult(call.ID+":"+params["p"].(string), tools.Markdown("shown")), nil
	}
	res, err := tools.Guard(context.Background(), f, &tools.Call{ID: "c9"}, map[string]any{"p": "v"},
		func(o tools.Output) { outputs = append(outputs, o.Text) })
	if err != nil || res.Text() != "c9:v" || res.Display != tools.Markdown("shown") {
		t.Errorf("got %+v, %v", res, err)
	}
	if strings.Join(outputs, ",") != "a,ab" {
		t.Errorf("outputs %q", outputs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A nil onOutput must be safe for the tool to call.
	if _, err := tools.Guard(ctx, f, &tools.Call{}, map[string]any{"p": "v"}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancellation error %v, want context.Canceled", err)
	}
}

func TestGuardConfirmAndDescribe(t *testing.T) {
	f := toolstest.NewFake("x", "")
	f.ShouldConfirmFunc = func(context.Context, *tools.Call, map[string]any) (*tools.Confirmation, *tools.ToolError) {
		panic("confirm bug")
	}
	f.DescribeFunc = func(map[string]any) string { panic("describe bug") }
	conf, terr := tools.GuardConfirm(context.Background(), f, &tools.Call{}, nil)
	if conf != nil || terr == nil || terr.Message != "The tool failed unexpectedly: confirm bug" {
		t.Errorf("GuardConfirm = %v, %v", conf, terr)
	}
	if got := tools.GuardDescribe(f, nil); got != "x" {
		t.Errorf("GuardDescribe after a panic = %q, want the display name", got)
	}
	f.DescribeFunc = func(map[string]any) string { return "src/a.go (lines 10-20)" }
	if got := tools.GuardDescribe(f, nil); got != "src/a.go (lines 10-20)" {
		t.Errorf("GuardDescribe = %q", got)
	}
}

func TestLocationJSON(t *testing.T) {
	b, _ := json.Marshal([]tools.Location{{Path: "/w/a"}, {Path: "/w/b", Line: 3}})
	if string(b) != `[{"path":"/w/a"},{"path":"/w/b","line":3}]` {
		t.Errorf("got %s", b)
	}
}
