// Package diff compares two texts line by line, the way the tools show a
// change and the editors review it (tools.md §1.2 and §2.11,
// protocol.md §6.2).
//
// The entry points are Unified, which renders a change as a unified diff
// with the header labels Current/Proposed (a confirmation) or
// Original/Written (a result), and Hunks, which cuts it into the whole-line
// hunks a review accepts or rejects one by one. LineChanges and SplitLines
// are the shortest (Myers) line diff and the line splitting underneath.
//
// The package imports nothing of qwen-ls.
package diff
