// The status bar item: what the agent is doing (idle, working with a tool,
// waiting for you), the approval mode, and whether the workspace is
// restricted. A click changes the approval mode.
import * as vscode from 'vscode';

/** experimental.qwen.sandbox of the initialize result. */
export interface SandboxInfo {
  summary?: string;
  readOnly?: boolean;
}

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('qwen.status', vscode.StatusBarAlignment.Right, 100);
  private busy = false;
  private tool: string | undefined;
  private waitingCount = 0;
  private mode = 'default';
  private trusted = true;
  private error: string | undefined;
  private sandbox: SandboxInfo | undefined;

  constructor() {
    this.item.name = 'Qwen';
    this.item.command = 'qwen.setApprovalMode';
    this.render();
    this.item.show();
  }

  setBusy(busy: boolean): void {
    this.busy = busy;
    if (!busy) this.tool = undefined;
    void vscode.commands.executeCommand('setContext', 'qwen.busy', busy);
    this.render();
  }

  setTool(tool: string | undefined): void {
    this.tool = tool;
    this.render();
  }

  waiting(on: boolean): void {
    this.waitingCount = Math.max(0, this.waitingCount + (on ? 1 : -1));
    this.render();
  }

  setMode(mode: string): void {
    this.mode = mode;
    this.render();
  }

  setTrusted(trusted: boolean): void {
    this.trusted = trusted;
    this.render();
  }

  /** Which OS sandbox confines the commands the agent runs unasked. */
  setSandbox(sandbox: SandboxInfo | undefined): void {
    this.sandbox = sandbox;
    this.render();
  }

  setError(error: string | undefined): void {
    this.error = error;
    this.render();
  }

  /** The state as one word, for the chat view. */
  get state(): string {
    if (this.error) return 'error';
    if (this.waitingCount > 0) return 'waiting for you';
    if (this.busy) return this.tool ? `working: ${this.tool}` : 'working';
    return 'idle';
  }

  private render(): void {
    const shield = this.trusted ? '' : '$(shield) ';
    let icon = '$(sparkle)';
    let text = 'idle';
    if (this.error) {
      icon = '$(error)';
      text = 'not running';
    } else if (this.waitingCount > 0) {
      icon = '$(bell-dot)';
      text = 'waiting for you';
    } else if (this.busy) {
      icon = '$(loading~spin)';
      text = this.tool ? `working: ${this.tool}` : 'working';
    }
    if (text.length > 40) text = text.slice(0, 39) + '…';
    this.item.text = `${shield}${icon} Qwen: ${text} · ${this.mode}`;
    const md = new vscode.MarkdownString();
    md.appendMarkdown(`**Qwen** — ${this.state}\n\nApproval mode: \`${this.mode}\` (click to change)`);
    if (!this.trusted) {
      md.appendMarkdown(
        '\n\n$(shield) Restricted workspace: qwen-ls ignores the workspace settings that start processes, widen permissions, raise the approval mode or change the model endpoint.',
      );
    }
    if (this.sandbox?.summary) {
      const icon = this.sandbox.readOnly ? '$(lock)' : '$(unlock)';
      md.appendMarkdown(`\n\n${icon} ${escapeMarkdown(this.sandbox.summary)}`);
    }
    if (this.error) md.appendMarkdown(`\n\n${this.error}`);
    md.supportThemeIcons = true;
    this.item.tooltip = md;
    this.item.backgroundColor =
      this.waitingCount > 0 ? new vscode.ThemeColor('statusBarItem.warningBackground') : this.error ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}

function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!<>|]/g, '\\$&');
}
