package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

func TestExitPlanModeDeclarationGolden(t *testing.T) {
	e := newTestEnv(t, nil)
	toolstest.Golden(t, "declarations/exit_plan_mode.json", declarationJSON(t, tools.NewExitPlanMode(e.Env)), *updateMisc)
}

func TestExitPlanModeSpec(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewExitPlanMode(e.Env)
	if tool.Name() != "exit_plan_mode" || tool.DisplayName() != "ExitPlanMode" || tool.Kind() != tools.KindThink ||
		len(tool.Aliases()) != 0 || !tool.SkipSchemaValidation() || tool.Source() != tools.SourceBuiltin {
		t.Errorf("static description is wrong")
	}
	if got := tool.Describe(map[string]any{"plan": "x"}); got != "Present plan for approval" {
		t.Errorf("describe %q", got)
	}
}

func TestExitPlanModeValidate(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewExitPlanMode(e.Env)
	// The tool's own message, never the schema's (tools.md §2.1 step 4).
	for _, raw := range []string{`{}`, `{"plan": null}`, `{"plan": ""}`, `{"plan": " \n\t"}`, `{"plan": 5}`, `{"plan": ["a"]}`} {
		_, terr := tools.PrepareArgs(tool, raw)
		if terr == nil || terr.Type != tools.ErrorInvalidToolParams || terr.Message != `Argument "plan" must not be empty.` {
			t.Errorf("%s: %+v", raw, terr)
		}
	}
	if _, terr := tools.PrepareArgs(tool, `{"plan": "1. Do it"}`); terr != nil {
		t.Errorf("a plan was refused: %s", terr.Message)
	}
}

func TestExitPlanModeConfirmation(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewExitPlanMode(e.Env)
	plan := "# Plan\n\n1. Edit `a.go`\n2. Run tests"
	params, terr := tools.PrepareArgs(tool, argsJSON(t, map[string]any{"plan": plan}))
	if terr != nil {
		t.Fatal(terr.Message)
	}
	conf, terr := tools.GuardConfirm(context.Background(), tool, &tools.Call{ID: "c", SessionID: "s"}, params)
	if terr != nil || conf == nil {
		t.Fatalf("confirmation %+v, %+v", conf, terr)
	}
	b, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"plan","title":"Would you like to proceed?","plan":"# Plan\n\n1. Edit ` + "`a.go`" + `\n2. Run tests"}`
	if string(b) != want {
		t.Errorf("confirmation JSON\n got %s\nwant %s", b, want)
	}
	if conf.Title != tools.PlanConfirmTitle {
		t.Errorf("title %q", conf.Title)
	}
}

func TestExitPlanModeApproved(t *testing.T) {
	e := newTestEnv(t, nil)
	tool := tools.NewExitPlanMode(e.Env)
	plan := "1. Do it"
	for _, tt := range []struct{ mode, shown string }{
		{"auto-edit", "auto-edit"},
		{"default", "default"},
		{"yolo", "yolo"},
		// A scheduler that did not say: the mode that promises least.
		{"", "default"},
	} {
		call := &tools.Call{ID: "c", SessionID: "s", Mode: tt.mode}
		res := run(t, tool, call, argsJSON(t, map[string]any{"plan": plan}))
		want := "The user approved your plan, and the approval mode is now " + tt.shown + ". Carry out the plan; if you keep a todo list, update it first."
		if res.Error != nil || res.Text() != want {
			t.Errorf("mode %q: %q %+v", tt.mode, res.Text(), res.Error)
		}
		d, ok := res.Display.(*tools.PlanSummary)
		if !ok || *d != (tools.PlanSummary{Message: "User approved the plan.", Plan: plan}) {
			t.Errorf("display %+v", res.Display)
		}
	}
}

func TestExitPlanModeRejected(t *testing.T) {
	if tools.PlanRejectedReason != "The user rejected the plan; plan mode stays on." {
		t.Errorf("reason %q", tools.PlanRejectedReason)
	}
	d := tools.PlanRejectedDisplay("1. Do it")
	b, err := json.Marshal(tools.Result{Display: d})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"llmContent":[],"returnDisplay":{"message":"User rejected the plan.","plan":"1. Do it","rejected":true}}`
	if string(b) != want {
		t.Errorf("rejected result JSON\n got %s\nwant %s", b, want)
	}
	var back tools.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got, ok := back.Display.(*tools.PlanSummary); !ok || !got.Rejected || got.Plan != "1. Do it" {
		t.Errorf("decoded display %+v", back.Display)
	}
}
