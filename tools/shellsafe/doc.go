// Package shellsafe judges a bash command line before anything runs it:
// whether it may run without asking (read-only), which sub-commands a
// permission rule covers, and which files it may write.
//
// It is the parser half of the shell's protection; the OS sandbox that
// confines what actually runs is the other half, and the two meet only
// here. The entry points:
//
//   - Parse splits a command line into sub-commands and judges each on the
//     text alone; Analyze does the same for one workspace, given as a
//     Context of plain values (roots, the directory the command runs in,
//     whether the folder's repository configuration is trusted).
//   - Analysis.ReadOnly is the verdict "may run unasked";
//     Analysis.NeedingApproval lists the sub-commands that are not.
//     A sub-command that would be read-only but reads a path under the
//     home folder, outside the roots, is not; its HomeRead names the path.
//   - Each SubCommand carries the directory it runs in (Dir), the paths it
//     may write (Targets) and why some cannot be known (Unresolved), for the
//     caller's protected-path check; MovesFolders names the programs judged
//     also by what their targets hold.
//   - RuleMatches, Cover and SuggestedRule apply and suggest the
//     specifiers of Bash(…) permission rules.
//   - GitDirs names the git directories behind a worktree's .git file, so
//     that their hooks and config can be protected too.
//
// The package imports nothing of qwen-ls but is imported by tools and
// session; what it needs of the workspace is passed in.
package shellsafe
