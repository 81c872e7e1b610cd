// The status bar item: what the agent is doing (idle, working with a tool,
// waiting for you, a review to look at), whether a model is set up (no model,
// error), the approval mode, and whether the workspace is restricted. A click
// opens the waiting review, else changes the approval mode.
import * as vscode from 'vscode';
import type { PendingReview } from './review/controller';

/** A setup problem on the status bar: its few words ("no API key"), the whole sentence, and whether a part is missing. */
export interface SetupStatus {
  status: string;
  message: string;
  missing: boolean;
}

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
  private noModel = false;
  private problem: SetupStatus | undefined;
  private reviews: PendingReview[] = [];

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

  /** No model is configured (initialize's experimental.qwen.model is null). */
  setNoModel(none: boolean): void {
    this.noModel = none;
    this.render();
  }

  /** The setup problem of the last prompt or check (kept until a turn gets through), or undefined. */
  setProblem(problem: SetupStatus | undefined): void {
    this.problem = problem;
    this.render();
  }

  /** The reviews waiting for the person: the item names the first and opens it on click. */
  setReviews(reviews: PendingReview[]): void {
    this.reviews = reviews;
    this.render();
  }

  /** The review line, e.g. "review 2 hunks in calc.go", or undefined. */
  private reviewText(): string | undefined {
    const r = this.reviews[0];
    if (!r) return undefined;
    const what = r.isNewFile ? `new file ${r.name}` : `${r.hunks} ${r.hunks === 1 ? 'hunk' : 'hunks'} in ${r.name}`;
    return `review ${what}${this.reviews.length > 1 ? ` (+${this.reviews.length - 1})` : ''}`;
  }

  /** Why qwen-ls is not running, or undefined. */
  get errorText(): string | undefined {
    return this.error;
  }

  /** The state in a few words, for the chat view. */
  get state(): string {
    if (this.error) return 'not running';
    const review = this.reviewText();
    if (review) return review;
    if (this.waitingCount > 0) return 'waiting for you';
    if (this.busy) return this.tool ? `working: ${this.tool}` : 'working';
    if (this.problem) return this.problem.status;
    if (this.noModel) return 'no model';
    return 'idle';
  }

  private render(): void {
    const shield = this.trusted ? '' : '$(shield) ';
    let icon = '$(sparkle)';
    let text = 'idle';
    const review = this.reviewText();
    this.item.command = 'qwen.setApprovalMode';
    if (this.error) {
      icon = '$(error)';
      text = 'not running';
    } else if (review) {
      icon = '$(diff)';
      text = review;
      this.item.command = { title: 'Review', command: 'qwen.review.show', arguments: [this.reviews[0].uri] };
    } else if (this.waitingCount > 0) {
      icon = '$(bell-dot)';
      text = 'waiting for you';
      this.item.command = 'qwen.focusQuestion';
    } else if (this.busy) {
      icon = '$(loading~spin)';
      text = this.tool ? `working: ${this.tool}` : 'working';
    } else if (this.problem) {
      icon = this.problem.missing ? '$(circle-slash)' : '$(error)';
      text = this.problem.status;
      this.item.command = 'qwen.checkSetup';
    } else if (this.noModel) {
      icon = '$(circle-slash)';
      text = 'no model';
      this.item.command = 'qwen.checkSetup';
    }
    if (text.length > 40) text = text.slice(0, 39) + '…';
    this.item.text = `${shield}${icon} Qwen: ${text} · ${this.mode}`;
    const md = new vscode.MarkdownString();
    md.appendMarkdown(`**Qwen** — ${escapeMarkdown(this.state)}\n\nApproval mode: \`${this.mode}\`${this.item.command === 'qwen.setApprovalMode' ? ' (click to change)' : ''}`);
    if (review) md.appendMarkdown('\n\nClick to open the review.');
    else if (this.item.command === 'qwen.focusQuestion') md.appendMarkdown('\n\nA question waits on its card in the chat. Click to go there.');
    if (this.problem) md.appendMarkdown(`\n\n${escapeMarkdown(this.problem.message)}\n\nClick to check the setup.`);
    else if (this.noModel && !this.busy) md.appendMarkdown('\n\nNo model is configured: set `qwen.model.name` and `qwen.model.baseUrl`. Click to check the setup.');
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
      this.waitingCount > 0 || review ? new vscode.ThemeColor('statusBarItem.warningBackground') : this.error ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}

function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!<>|]/g, '\\$&');
}

/**
 * The second status bar item: the session's model ("$(hubot) qwen3-coder-plus"),
 * which opens the model picker; its tooltip holds the session's token totals
 * and how full the model's context is.
 */
export class ModelStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('qwen.model', vscode.StatusBarAlignment.Right, 99);
  private model: string | null | undefined;
  /** A configured model that cannot be used, and why ("no API key"). */
  private problem: { model: string; status: string } | undefined;
  private totals: string | undefined;
  private context: string | undefined;

  constructor() {
    this.item.name = 'Qwen Model';
    this.item.command = 'qwen.pickModel';
    this.render();
    this.item.show();
  }

  /** The model in use: a name, null when none is configured, undefined before the server says. */
  setModel(model: string | null | undefined): void {
    this.model = model;
    this.render();
  }

  /** A model named in the settings that cannot be used yet, and what is missing; undefined when none. */
  setProblem(problem: { model: string; status: string } | undefined): void {
    this.problem = problem;
    this.render();
  }

  /** The session's running totals (formatSessionUsage), or undefined before the first turn. */
  setTotals(totals: string | undefined): void {
    this.totals = totals;
    this.render();
  }

  /** How full the context was after the last model request (formatContext). */
  setContext(context: string | undefined): void {
    this.context = context;
    this.render();
  }

  private render(): void {
    const unusable = this.model === null ? this.problem : undefined;
    const name = unusable ? unusable.model : this.model === null ? 'no model' : (this.model ?? '…');
    this.item.text = `$(hubot) ${name.length > 40 ? name.slice(0, 39) + '…' : name}${unusable ? ' $(warning)' : ''}`;
    const md = new vscode.MarkdownString();
    md.supportThemeIcons = true;
    if (unusable) md.appendMarkdown(`**Model:** \`${unusable.model.replace(/`/g, "'")}\`, not usable yet: ${escapeMarkdown(unusable.status)}`);
    else md.appendMarkdown(this.model ? `**Model:** \`${this.model.replace(/`/g, "'")}\`` : '**Model:** none configured');
    if (this.totals) md.appendMarkdown(`\n\n${escapeMarkdown(this.totals)}`);
    if (this.context) md.appendMarkdown(`\n\n${escapeMarkdown(this.context)}`);
    md.appendMarkdown('\n\nClick to choose the model.');
    this.item.tooltip = md;
  }

  dispose(): void {
    this.item.dispose();
  }
}
