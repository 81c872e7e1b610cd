package rpc_test

import "github.com/qwen-ls/qwen-ls/tools/procgroup"

// killGroup ends the terminal's job: Windows has no signal to choose.
func killGroup(id int) { procgroup.Terminate(id) }
