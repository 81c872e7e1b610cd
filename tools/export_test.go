package tools

import (
	"context"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools/sandbox"
	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
)

// The black-box tests (package tools_test) reach these unexported names
// under their former exported ones.

const (
	AgentBuiltin                        = agentBuiltin
	ApprovalUnknown                     = approvalUnknown
	ConfirmPlan                         = confirmPlan
	ErrorAttemptToCreateExistingFile    = errorAttemptToCreateExistingFile
	ErrorEditExpectedOccurrenceMismatch = errorEditExpectedOccurrenceMismatch
	ErrorEditNoChange                   = errorEditNoChange
	ErrorEditNoOccurrenceFound          = errorEditNoOccurrenceFound
	ErrorEditPreparationFailure         = errorEditPreparationFailure
	ErrorEditRequiresPriorRead          = errorEditRequiresPriorRead
	ErrorFileChangedSinceRead           = errorFileChangedSinceRead
	ErrorFileNotFound                   = errorFileNotFound
	ErrorFileTooLarge                   = errorFileTooLarge
	ErrorFileWriteFailure               = errorFileWriteFailure
	ErrorLsExecution                    = errorLsExecution
	ErrorMemoryToolExecution            = errorMemoryToolExecution
	ErrorPathIsNotADirectory            = errorPathIsNotADirectory
	ErrorPathNotInWorkspace             = errorPathNotInWorkspace
	ErrorPermissionDenied               = errorPermissionDenied
	ErrorReadContentFailure             = errorReadContentFailure
	ErrorReadManyFilesSearch            = errorReadManyFilesSearch
	ErrorSearchPathNotADirectory        = errorSearchPathNotADirectory
	ErrorSearchPathNotFound             = errorSearchPathNotFound
	ErrorShellExecute                   = errorShellExecute
	ErrorTargetIsDirectory              = errorTargetIsDirectory
	FileAudio                           = fileAudio
	FileImage                           = fileImage
	FileNotebook                        = fileNotebook
	FilePDF                             = filePDF
	FileSVG                             = fileSVG
	FileText                            = fileText
	FileVideo                           = fileVideo
	MemorySectionHeader                 = memorySectionHeader
	PlanConfirmTitle                    = planConfirmTitle
	ReviewRejected                      = reviewRejected
	SubagentCompleted                   = subagentCompleted
	TodoCompleted                       = todoCompleted
	TodoInProgress                      = todoInProgress
	TodoPending                         = todoPending
)

var (
	ErrorGrepExecution               = errorGrepExecution
	ErrorGlobExecution               = errorGlobExecution
	ErrorPriorReadVerificationFailed = errorPriorReadVerificationFailed
	ErrorNoSpaceLeft                 = errorNoSpaceLeft
	ErrorUnknown                     = errorUnknown
	AddMemory                        = addMemory
	BufferFileType                   = bufferFileType
	ClassifyReview                   = classifyReview
	CompileArgsSchema                = compileArgsSchema
	EntryFor                         = entryFor
	FileTypeByName                   = fileTypeByName
	HashText                         = hashText
	IsBinaryExtension                = isBinaryExtension
	MIMEType                         = mimeType
	NewAgents                        = newAgents
	NormalizeFact                    = normalizeFact
	ParseAgentDefinition             = parseAgentDefinition
	RejectionDisplay                 = rejectionDisplay
	RejectionMessage                 = rejectionMessage
	SniffFileType                    = sniffFileType
	TildePath                        = tildePath
	UnmarshalDisplay                 = unmarshalDisplay
	WindowText                       = windowText
)

type (
	AgentDefinition = agentDefinition
	AgentProblem    = agentProblem
	FileContent     = fileContent
	PathOptions     = pathOptions
	ReadSpec        = readSpec
	TextWindow      = textWindow
)

// The methods the black-box tests call under their exported names.

// OnWarning registers f for each newly skipped file (a file that stays
// broken is reported once).
func (a *Agents) OnWarning(f func(agentProblem)) {
	a.mu.Lock()
	a.warn = append(a.warn, f)
	a.mu.Unlock()
}

func (a *Agents) List() []agentDefinition { return a.list() }

// Find looks a definition up by name, case-insensitively.
func (a *Agents) Find(name string) (agentDefinition, bool) {
	for _, d := range a.list() {
		if strings.EqualFold(d.Name, name) {
			return d, true
		}
	}
	return agentDefinition{}, false
}

func (e *Env) Threshold() int { return e.threshold() }

func (e *Env) LineLimit() int { return e.lineLimit() }

func (e *Env) Unchanged(l *Ledger, abs string) (entry ledgerEntry, known, unchanged bool, err error) {
	return e.unchanged(l, abs)
}

func (e *Env) AbsPath(raw string, opts pathOptions) (string, *ToolError) { return e.absPath(raw, opts) }

func (e *Env) ProtectedPaths() []string { return e.protectedPaths() }

func (e *Env) AcceptsModality(t FileType) bool { return e.acceptsModality(t) }

func (e *Env) ReadContent(ctx context.Context, spec readSpec) (fileContent, error) {
	return e.readContent(ctx, spec)
}

func (e *Env) AnalyzeShell(cmd, dir string) (*shellsafe.Analysis, error) {
	return e.analyzeShell(cmd, dir)
}

// Valid reports whether k is one of the nine kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindRead, KindEdit, KindDelete, KindMove, KindSearch, KindExecute, KindThink, KindFetch, KindOther:
		return true
	}
	return false
}

func (l *Ledger) Record(path string, e ledgerEntry) { l.record(path, e) }

func (l *Ledger) Lookup(path string) (ledgerEntry, bool) { return l.lookup(path) }

// Problems lists the files skipped by the last read.
func (a *Agents) Problems() []agentProblem { return a.skipped() }

// BlockedBySandbox is blockedBySandbox, for tests.
func BlockedBySandbox(pol sandbox.Policy, denials []sandbox.Denial, dir, stderr string) string {
	return blockedBySandbox(pol, denials, dir, stderr)
}

// ProtectedClass is protectedClass, for tests.
func (e *Env) ProtectedClass() sandbox.Class { return e.protectedClass() }
