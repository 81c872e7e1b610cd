// Package launch is the first stage of the sandbox supervisor: it
// confines a thread and starts the command from it while the rest of the
// binary is still initialising.
//
// The supervisor is qwen-ls run again for every command, and a Go program
// runs the initialisers of every package it links before any code of its
// own. qwen-ls links an SDK, an HTML converter, an encoding detector and
// more, whose initialisers cost more than everything the sandbox does.
// Go runs a package's initialiser as soon as its imports are done, in
// import path order among those ready, so a package that imports nothing
// but the runtime, os and syscall runs among the first. This one does.
// It reads a plan the server prepared (Plan, in an environment variable:
// every path, access mask and filter instruction already worked out),
// applies it, starts the command, reaps it and reports its status, and
// returns; package sandbox's own initialiser, which runs once the rest
// is ready, then takes over what needs more of the standard library (the
// guard, the server's death, signals, what the command left running).
//
// It imports only the runtime, os, sync and syscall: adding an import
// (strings, strconv, fmt, anything outside the standard library) moves
// it later and costs every command the time it exists to save.
package launch

// EnvPlan carries the plan from the server to the supervisor, which
// removes it from the command's environment.
const EnvPlan = "QWEN_LS_SANDBOX_LAUNCH"

// Arg is the first argument that makes a binary act as the supervisor
// (the same as package sandbox's).
const Arg = "sandbox-exec"
