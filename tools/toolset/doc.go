// Package toolset is the list of qwen-ls's built-in tools (tools.md §1.5).
// It sits above tools and tools/web so that neither needs to know the
// other's tools.
//
// The entry points are Builtins, the built-in tools in their declaration
// order, and Unavailable, the ones the current settings leave undeclared.
package toolset
