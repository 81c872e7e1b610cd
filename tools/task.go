package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed task.md
var taskDescription string

var taskSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "description": {
      "type": "string",
      "description": "A short label for the task, 3 to 5 words, shown to the user."
    },
    "prompt": {
      "type": "string",
      "description": "The complete brief for the subagent: the goal, what is already known, constraints, and what its final report must contain. The subagent sees nothing else of this conversation."
    },
    "subagent_type": {
      "type": "string",
      "description": "The name of the subagent to run, from the list in this tool's description. Defaults to general-purpose."
    }
  },
  "required": ["description", "prompt"]
}`)

// SubagentRequest asks the session to run one subagent: a sub-session with
// its own history and read ledger (tools.md §3.13).
type SubagentRequest struct {
	// CallID is the task call that runs the subagent. The editor knows
	// that call, so the subagent's permission prompts and edit reviews
	// refer to it.
	CallID string
	// Name is the subagent's name; prompt titles are prefixed
	// "[<Name>] ".
	Name string
	// Description is the task call's description argument.
	Description string
	// SystemPrompt is the definition's body; the session adds its
	// environment section.
	SystemPrompt string
	// Prompt is the first user message.
	Prompt string
	// Tools restricts the sub-session's tools to these names or aliases;
	// nil means all of the session's.
	Tools []string
	// Model overrides the model name; "" keeps the session's.
	Model string
	// MaxTurns bounds the model requests of the run.
	MaxTurns int
}

// SubagentResult is how a subagent run ended.
type SubagentResult struct {
	// Text is the last reply's text: the answer, or with MaxTurnsReached
	// the partial result.
	Text string
	// Turns counts the model requests made.
	Turns int
	// MaxTurnsReached: the run stopped after MaxTurns requests that all
	// asked for tools.
	MaxTurnsReached bool
	// ToolCalls are the subagent's calls with their final statuses.
	ToolCalls []SubagentToolCall
}

// Task is the task tool (tools.md §3.13): it runs a subagent in a
// sub-session through the session's Model and returns the subagent's final
// reply. The definitions come from Agents; the description lists them as
// they are when it is asked for, so a changed definition reaches the model
// with its next request.
type Task struct {
	Base
	env    *Env
	agents *Agents
}

// NewTask returns the task tool.
func NewTask(env *Env) *Task {
	return &Task{env: env, agents: newAgents(env), Base: Base{Spec: Spec{
		Name:                 "task",
		DisplayName:          "Task",
		Description:          strings.TrimSpace(taskDescription),
		Schema:               taskSchema,
		Kind:                 KindOther,
		Aliases:              []string{"agent"},
		SkipSchemaValidation: true,
	}}}
}

// Agents returns the subagent definitions the tool uses (for a caller
// that wants their warnings).
func (t *Task) Agents() *Agents { return t.agents }

// Description is the fixed text followed by one line per subagent,
// `- **<name>**: <description>`, read from the current definitions.
func (t *Task) Description() string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(taskDescription))
	for _, d := range t.agents.list() {
		fmt.Fprintf(&b, "\n- **%s**: %s", d.Name, strings.Join(strings.Fields(d.Description), " "))
	}
	return b.String()
}

// The validation messages of tools.md §3.13.
const (
	taskNoDescription = `Argument "description" must not be empty.`
	taskNoPrompt      = `Argument "prompt" must not be empty.`
	taskUnknownType   = `There is no subagent named %q. Available: %s.`
	taskMaxTurns      = "Subagent stopped after reaching the maximum of %d turns. Partial result:\n\n%s"
	taskFailed        = "The subagent failed: "
)

func textArg(params map[string]any, name string) string {
	s, _ := params[name].(string)
	return strings.TrimSpace(s)
}

// subagent finds the definition the call names (case-insensitively);
// a missing or blank subagent_type means general-purpose.
func (t *Task) subagent(params map[string]any) (agentDefinition, *ToolError) {
	name := defaultSubagent
	switch v := params["subagent_type"].(type) {
	case nil:
	case string:
		if strings.TrimSpace(v) != "" {
			name = strings.TrimSpace(v)
		}
	default:
		name = fmt.Sprint(v)
	}
	defs := t.agents.list()
	names := make([]string, len(defs))
	for i, d := range defs {
		if strings.EqualFold(d.Name, name) {
			return d, nil
		}
		names[i] = d.Name
	}
	msg := fmt.Sprintf(taskUnknownType, name, strings.Join(names, ", "))
	// A definition the person wrote but got wrong is the likely reason
	// for an unknown name: say which files were left out, and why.
	if probs := t.agents.skipped(); len(probs) > 0 {
		parts := make([]string, len(probs))
		for i, p := range probs {
			parts[i] = fmt.Sprintf("%s (%v)", p.Path, p.Err)
		}
		msg += " Definition files left out: " + strings.Join(parts, "; ") + "."
	}
	return agentDefinition{}, InvalidParams(msg)
}

// Validate checks description, prompt and the subagent's name, with the
// messages of tools.md §3.13 (the schema step is skipped for this tool).
func (t *Task) Validate(params map[string]any) *ToolError {
	if textArg(params, "description") == "" {
		return InvalidParams(taskNoDescription)
	}
	if textArg(params, "prompt") == "" {
		return InvalidParams(taskNoPrompt)
	}
	_, terr := t.subagent(params)
	return terr
}

// Describe is `<subagent> subagent: "<description>"`.
func (t *Task) Describe(params map[string]any) string {
	name := defaultSubagent
	if d, terr := t.subagent(params); terr == nil {
		name = d.Name
	}
	return fmt.Sprintf("%s subagent: \"%s\"", name, textArg(params, "description"))
}

// Execute runs the subagent and returns its final reply. Progress streams
// as a SubagentRun display.
func (t *Task) Execute(ctx context.Context, call *Call, params map[string]any, onOutput func(Output)) (Result, error) {
	def, terr := t.subagent(params)
	if terr != nil {
		// The definition went away since validation.
		return Result{Error: terr}, nil
	}
	desc := textArg(params, "description")
	if call == nil || call.Model == nil {
		return ErrorResult(ErrorExecutionFailed, taskFailed+"no model is configured."), nil
	}
	onOutput(Output{Display: &SubagentRun{SubagentName: def.Name, Description: desc, Status: SubagentRunning}})
	prompt, _ := params["prompt"].(string)
	res, err := call.Model.RunSubagent(ctx, SubagentRequest{
		CallID:       call.ID,
		Name:         def.Name,
		Description:  desc,
		SystemPrompt: def.SystemPrompt,
		Prompt:       prompt,
		Tools:        def.Tools,
		Model:        def.Model,
		MaxTurns:     def.MaxTurns,
	}, func(run SubagentRun) { onOutput(Output{Display: &run}) })
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	if err != nil {
		return ErrorResult(ErrorExecutionFailed, taskFailed+err.Error()), nil
	}
	text := res.Text
	if res.MaxTurnsReached {
		partial := res.Text
		if strings.TrimSpace(partial) == "" {
			partial = "(none)"
		}
		text = fmt.Sprintf(taskMaxTurns, def.MaxTurns, partial)
	}
	return TextResult(text, &SubagentRun{SubagentName: def.Name, Description: desc, Status: subagentCompleted,
		ToolCalls: res.ToolCalls, Result: text, Turns: res.Turns}), nil
}
