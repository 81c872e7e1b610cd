package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed exitplan.md
var exitPlanModeDescription string

var exitPlanModeSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "plan": {
      "type": "string",
      "description": "The plan to present to the user, in Markdown: concise, step by step, naming the files and changes involved."
    }
  },
  "required": ["plan"]
}`)

// The texts of tools.md §3.14 that the scheduler needs.
const (
	// planConfirmTitle is the title of the plan confirmation.
	planConfirmTitle = "Would you like to proceed?"
	// PlanRejectedReason is the cancellation reason the model reads when
	// the user keeps planning (the scheduler prefixes "[Cancelled] ").
	PlanRejectedReason = "The user rejected the plan; plan mode stays on."
	// planApprovedMessage is the PlanSummary message of an approved plan.
	planApprovedMessage = "User approved the plan."
	// planRejectedMessage is the PlanSummary message of a rejected plan.
	planRejectedMessage = "User rejected the plan."
)

// modeAfterUnknown is the mode exit_plan_mode reports when the scheduler
// did not say: proceed_once's, the one that promises the least.
const modeAfterUnknown = "default"

// ExitPlanMode is the exit_plan_mode tool (tools.md §3.14): it presents the
// model's plan to the user. The answer and the mode switch belong to the
// session (proceed_always → auto-edit, proceed_once → default, cancel →
// plan stays; in yolo nobody is asked and the mode stays yolo); Execute
// only runs once the plan was approved, and reads the resulting mode from
// Call.Mode.
type ExitPlanMode struct {
	Base
	env *Env
}

// NewExitPlanMode returns the exit_plan_mode tool.
func NewExitPlanMode(env *Env) *ExitPlanMode {
	return &ExitPlanMode{env: env, Base: Base{Spec: Spec{
		Name:                 "exit_plan_mode",
		DisplayName:          "ExitPlanMode",
		Description:          strings.TrimSpace(exitPlanModeDescription),
		Schema:               exitPlanModeSchema,
		Kind:                 KindThink,
		SkipSchemaValidation: true,
	}}}
}

// planOf is the plan argument; "" when it is missing or not a string.
func planOf(params map[string]any) string {
	p, _ := params["plan"].(string)
	return p
}

// Validate refuses a missing, non-string or blank plan, with the one
// message of tools.md §3.14 (the schema step is skipped for this tool).
func (t *ExitPlanMode) Validate(params map[string]any) *ToolError {
	if strings.TrimSpace(planOf(params)) == "" {
		return InvalidParams(`Argument "plan" must not be empty.`)
	}
	return nil
}

// Describe is "Present plan for approval".
func (t *ExitPlanMode) Describe(map[string]any) string { return "Present plan for approval" }

// ShouldConfirm asks the user to approve the plan.
func (t *ExitPlanMode) ShouldConfirm(_ context.Context, _ *Call, params map[string]any) (*Confirmation, *ToolError) {
	return &Confirmation{Title: planConfirmTitle, Details: &PlanConfirmation{Plan: planOf(params)}}, nil
}

// Execute reports the approved plan and the mode the session is now in.
func (t *ExitPlanMode) Execute(_ context.Context, call *Call, params map[string]any, _ func(Output)) (Result, error) {
	mode := call.Mode
	if mode == "" {
		mode = modeAfterUnknown
	}
	msg := fmt.Sprintf("The user approved your plan, and the approval mode is now %s. Carry out the plan; if you keep a todo list, update it first.", mode)
	return TextResult(msg, &PlanSummary{Message: planApprovedMessage, Plan: planOf(params)}), nil
}

// PlanRejectedDisplay is the display of a plan the user turned down; the
// scheduler shows it with the cancelled state and PlanRejectedReason.
func PlanRejectedDisplay(plan string) *PlanSummary {
	return &PlanSummary{Message: planRejectedMessage, Plan: plan, Rejected: true}
}
