// Package toolstest holds test doubles for the tools contract: Fake, a tool
// whose behaviour a test sets with plain fields, and Golden, which pins long
// outputs (llmContent formats, function declarations) in testdata files.
//
// The entry points are NewFake and Golden.
package toolstest

import (
	"context"
	"encoding/json"

	"github.com/qwen-ls/qwen-ls/tools"
)

// Fake is a tool for tests. Its static parts come from Base.Spec; each
// operation runs the matching func field when set, else Base's default (or,
// for Describe and Execute, a fixed answer).
type Fake struct {
	tools.Base

	ValidateFunc      func(params map[string]any) *tools.ToolError
	DescribeFunc      func(params map[string]any) string
	LocationsFunc     func(params map[string]any) []tools.Location
	ShouldConfirmFunc func(ctx context.Context, call *tools.Call, params map[string]any) (*tools.Confirmation, *tools.ToolError)
	ExecuteFunc       func(ctx context.Context, call *tools.Call, params map[string]any, onOutput func(tools.Output)) (tools.Result, error)
}

// NewFake returns a fake tool of kind other named name, with schema (an
// empty object schema when schema is "").
func NewFake(name, schema string) *Fake {
	if schema == "" {
		schema = `{"type":"object","properties":{}}`
	}
	return &Fake{Base: tools.Base{Spec: tools.Spec{
		Name:        name,
		DisplayName: name,
		Description: "A fake tool named " + name + ".",
		Schema:      json.RawMessage(schema),
		Kind:        tools.KindOther,
	}}}
}

func (f *Fake) Validate(params map[string]any) *tools.ToolError {
	if f.ValidateFunc != nil {
		return f.ValidateFunc(params)
	}
	return f.Base.Validate(params)
}

// Describe defaults to "<name> call".
func (f *Fake) Describe(params map[string]any) string {
	if f.DescribeFunc != nil {
		return f.DescribeFunc(params)
	}
	return f.Name() + " call"
}

func (f *Fake) Locations(params map[string]any) []tools.Location {
	if f.LocationsFunc != nil {
		return f.LocationsFunc(params)
	}
	return f.Base.Locations(params)
}

func (f *Fake) ShouldConfirm(ctx context.Context, call *tools.Call, params map[string]any) (*tools.Confirmation, *tools.ToolError) {
	if f.ShouldConfirmFunc != nil {
		return f.ShouldConfirmFunc(ctx, call, params)
	}
	return f.Base.ShouldConfirm(ctx, call, params)
}

// Execute defaults to a success whose text is "<name> done".
func (f *Fake) Execute(ctx context.Context, call *tools.Call, params map[string]any, onOutput func(tools.Output)) (tools.Result, error) {
	if f.ExecuteFunc != nil {
		return f.ExecuteFunc(ctx, call, params, onOutput)
	}
	return tools.TextResult(f.Name()+" done", nil), nil
}
