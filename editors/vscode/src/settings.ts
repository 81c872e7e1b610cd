import * as vscode from 'vscode';

/** The approval mode new sessions start in (qwen.approvalMode). */
export function approvalModeSetting(): string {
  return vscode.workspace.getConfiguration('qwen').get<string>('approvalMode', 'default');
}
