package tools

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
	AddMemory            = addMemory
	BufferFileType       = bufferFileType
	ClassifyReview       = classifyReview
	CompileArgsSchema    = compileArgsSchema
	EntryFor             = entryFor
	ErrorTypes           = errorTypes
	FileTypeByName       = fileTypeByName
	HashText             = hashText
	IsBinaryExtension    = isBinaryExtension
	MIMEType             = mimeType
	NewAgents            = newAgents
	NormalizeFact        = normalizeFact
	ParseAgentDefinition = parseAgentDefinition
	RejectionDisplay     = rejectionDisplay
	RejectionMessage     = rejectionMessage
	SniffFileType        = sniffFileType
	TildePath            = tildePath
	UnmarshalDisplay     = unmarshalDisplay
	WindowText           = windowText
)
