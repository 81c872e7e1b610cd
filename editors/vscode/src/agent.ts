// The chat side of the agent protocol: sessions, prompts, the stream of
// qwen/sessionUpdate, turned into messages for the chat view and the state
// of the status bar.
import * as vscode from 'vscode';
import * as path from 'path';
import MarkdownIt from 'markdown-it';
import { LanguageClient, State } from 'vscode-languageclient/node';
import { approvalModeSetting } from './settings';
import { ChatViewProvider } from './chat/view';
import { parseCommands, SlashCommand } from './chat/commands';
import { callEnd } from './chat/outcome';
import { findMentions, HostMessage, PlanEntry, ToolCard, serverApprovalModes, WebviewMessage } from './chat/protocol';
import { ModelStatusBar, StatusBar } from './status';
import { addUsage, formatContext, formatSessionUsage, formatTurnUsage, modelItems, modelNameNotice, noUsage, parseModelList, parseUsage, Usage } from './models';
import { codeIntelligenceSummary, fixActions, fixPlaces, isMissing, parseCheckSetup, SetupProblem, settingsQuery as settingsQueryFor, setupProblem, setupText, toolOutcome } from './setup';
import { sessionItem } from './sessions';

// html: false escapes any HTML the model writes; the webview's CSP blocks
// scripts in any case.
const md = new MarkdownIt({ html: false, linkify: false, breaks: false });

type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'resource'; resource: { uri: string; text: string; mimeType?: string } };

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * What the agent needs of the extension that owns it: the language client
 * (started on demand) and the output channel. Declared here, and met by
 * Extension, so that agent.ts does not import extension.ts, which imports
 * it.
 */
export interface AgentHost {
  readonly client: LanguageClient | undefined;
  ensureClient(): Promise<LanguageClient | undefined>;
  readonly output: vscode.LogOutputChannel;
  /**
   * Whether the settings VS Code can see reach a model: qwen.model.baseUrl
   * on loopback, or a key (Set API Key, or OPENAI_API_KEY / DASHSCOPE_API_KEY
   * in the environment) with an endpoint or without one.
   */
  keyOrEndpointSet(): Promise<boolean>;
  /** The extensions whose language features answer qwen/lsp for a document (lsp/handler.ts). */
  readonly lsp: { coverage(uri: vscode.Uri): Promise<{ languageId?: string; servers: string[] }> };
}

export class Agent {
  sessionId: string | undefined;
  mode: string | undefined;
  private model: string | null = null;
  /** A sentence for the empty chat when no model is configured, else null. */
  private setupHint: string | null = null;
  private busy = false;
  private messageSeq = 0;
  private currentAgentId: string | undefined;
  private currentThoughtId: string | undefined;
  private agentText = new Map<string, string>();
  private thoughtText = new Map<string, string>();
  private cards = new Map<string, ToolCard>();
  /** The session's tokens, summed over the turns this window saw (a loaded session starts at zero). */
  private totals: Usage = noUsage;
  private countedTurns = 0;
  /** history_cleared arrived during the running prompt (/clear): its transcript starts afresh. */
  private clearedInTurn = false;

  constructor(
    private readonly ext: AgentHost,
    private readonly chat: ChatViewProvider,
    private readonly status: StatusBar,
    private readonly modelStatus: ModelStatusBar,
  ) {
    this.status.setMode(approvalModeSetting());
  }

  /** Sends the state again (the status changed outside the agent). */
  refreshState(): void {
    this.postState();
  }

  /** qwen-ls cannot start: the empty chat says why instead of suggesting a prompt. */
  serverUnavailable(message: string): void {
    this.setupHint = message;
    this.postState();
  }

  private post(m: HostMessage): void {
    this.chat.post(m);
  }

  private postState(): void {
    this.post({
      type: 'state',
      busy: this.busy,
      mode: this.mode ?? approvalModeSetting(),
      sessionId: this.sessionId ?? null,
      model: this.model,
      unusableModel: this.model === null ? (this.unusable?.model ?? null) : null,
      status: this.status.state,
      setupHint: this.setupHint,
      tokens: this.countedTurns > 0 ? formatSessionUsage(this.totals, this.countedTurns) : null,
    });
  }

  async fromWebview(m: WebviewMessage): Promise<void> {
    switch (m.type) {
      case 'ready':
        this.postState();
        return;
      case 'prompt':
        return this.prompt(m.text);
      case 'cancel':
        return this.cancel();
      case 'newSession':
        return this.newSession();
      case 'listSessions':
        return this.pickSession();
      case 'setMode':
        return this.setMode(m.mode);
      case 'pickMention':
        return this.pickMention();
      case 'openReview':
        await vscode.commands.executeCommand('qwen.review.show', m.uri);
        return;
      case 'openSettings':
        if (m.query === 'qwen.serverPath' && vscode.env.remoteName) {
          await vscode.commands.executeCommand('workbench.action.openRemoteSettings', { query: m.query });
        } else {
          await vscode.commands.executeCommand('workbench.action.openSettings', m.query);
        }
        return;
      case 'checkSetup':
        return this.checkSetup();
      case 'setApiKey':
        await vscode.commands.executeCommand('qwen.setApiKey');
        return;
      case 'pickModel':
        return this.pickModel();
      case 'listCommands':
        return this.refreshCommands();
      case 'openLocation': {
        const uri = vscode.Uri.file(m.path);
        if (!vscode.workspace.getWorkspaceFolder(uri)) return;
        const line = Math.max(0, (m.line ?? 1) - 1);
        await vscode.window.showTextDocument(uri, { selection: new vscode.Range(line, 0, line, 0), preview: true });
        return;
      }
    }
  }

  private async requireClient() {
    const client = await this.ext.ensureClient();
    if (!client) throw new Error(this.status.errorText ?? 'qwen-ls is not running; see the Qwen output channel.');
    return client;
  }

  private async ensureSession(): Promise<string> {
    if (this.sessionId) return this.sessionId;
    const client = await this.requireClient();
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const res = await client.sendRequest<{ sessionId: string; approvalMode: string; model: string | null }>('qwen/newSession', {
      ...(cwd ? { cwd } : {}),
      approvalMode: this.mode ?? approvalModeSetting(),
    });
    this.sessionId = res.sessionId;
    this.mode = res.approvalMode;
    this.setModel(res.model);
    this.status.setMode(res.approvalMode);
    this.postState();
    void this.refreshCommands();
    return res.sessionId;
  }

  /** The prompt blocks: the text, then one resource block per @-mentioned file with its buffer's text. */
  private async promptBlocks(text: string): Promise<ContentBlock[]> {
    const blocks: ContentBlock[] = [{ type: 'text', text }];
    for (const mention of findMentions(text)) {
      const uri = this.resolveMention(mention);
      if (!uri) continue;
      try {
        const doc = await vscode.workspace.openTextDocument(uri);
        blocks.push({ type: 'resource', resource: { uri: uri.toString(), text: doc.getText() } });
      } catch {
        // Not a text file or not there: the model still sees the @path in the text.
      }
    }
    return blocks;
  }

  private resolveMention(p: string): vscode.Uri | undefined {
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      const abs = path.isAbsolute(p) ? p : path.join(folder.uri.fsPath, p);
      const rel = path.relative(folder.uri.fsPath, abs);
      if (rel.startsWith('..') || path.isAbsolute(rel)) continue;
      return vscode.Uri.file(abs);
    }
    return undefined;
  }

  async prompt(text: string): Promise<void> {
    if (this.busy) {
      this.post({ type: 'error', message: 'The agent is still working: stop it first, or wait.' });
      return;
    }
    this.busy = true;
    this.status.setBusy(true);
    this.post({ type: 'user', text });
    this.currentAgentId = undefined;
    this.currentThoughtId = undefined;
    this.clearedInTurn = false;
    this.postState();
    let sessionId: string | undefined;
    try {
      sessionId = await this.ensureSession();
      const client = await this.requireClient();
      const blocks = await this.promptBlocks(text);
      const res = await client.sendRequest<{ stopReason: string; usage?: unknown; command?: unknown }>('qwen/prompt', { sessionId, prompt: blocks });
      const usage = parseUsage(res.usage);
      if (usage && sessionId === this.sessionId) {
        this.totals = addUsage(this.totals, usage);
        this.countedTurns++;
        this.modelStatus.setTotals(formatSessionUsage(this.totals, this.countedTurns));
      }
      // After /clear the transcript holds only what came after it: no end mark of a turn it no longer shows.
      // Nor after New Session or another session was picked: that chat is gone.
      if (!this.clearedInTurn && sessionId === this.sessionId) this.post({ type: 'turnEnd', stopReason: res.stopReason, ...(usage ? { usage: formatTurnUsage(usage) } : {}) });
      this.status.setProblem(undefined);
    } catch (err) {
      const code = isObj(err) && typeof err.code === 'number' ? err.code : undefined;
      const problem = isObj(err) ? setupProblem(err.data) : undefined;
      if (sessionId !== undefined && sessionId !== this.sessionId) {
        // The chat moved to another session (New Session cancels the turn):
        // the end of this one belongs to a transcript no longer shown.
      } else if (code === -32800) {
        this.post({ type: 'turnEnd', stopReason: 'cancelled' });
      } else if (problem) {
        this.setupFailed(errorText(err), problem);
      } else {
        this.post({ type: 'error', message: errorText(err) });
        if (code === -32000) {
          // A server without error.data: the old hint.
          void vscode.window
            .showErrorMessage(`Qwen: ${errorText(err)}`, 'Set API Key', 'Open Settings')
            .then((a) =>
              a === 'Set API Key'
                ? vscode.commands.executeCommand('qwen.setApiKey')
                : a === 'Open Settings'
                  ? vscode.commands.executeCommand('workbench.action.openSettings', 'qwen.model')
                  : undefined,
            );
        }
      }
    } finally {
      this.busy = false;
      this.status.setBusy(false);
      this.postState();
    }
  }

  /**
   * The model in use (null: none usable), from initialize or a new
   * session. Without one, a quiet setup check says what is missing: "no
   * model" only when nothing is configured.
   */
  setModel(model: string | null | undefined): void {
    if (model === undefined) return; // a server that does not say
    this.model = model;
    this.modelStatus.setModel(model);
    if (model !== null) {
      this.status.setNoModel(false);
      this.unusable = undefined;
      this.modelStatus.setProblem(undefined);
      if (this.setupHint !== null && this.status.errorText === undefined) this.setupHint = null;
    } else {
      void this.diagnoseSetup();
    }
    this.postState();
  }

  /** A model the settings name that cannot be used yet (no key, no endpoint), from the quiet check. */
  private unusable: { model: string; status: string } | undefined;

  /** Counts the quiet checks, so that an older one's answer does not win. */
  private diagnoseSeq = 0;

  /**
   * No usable model: qwen/checkSetup says why, in VS Code's words, on the
   * status bar, the model item and the empty chat. No toast: nobody asked
   * yet. With no model usable the check sends no request to any endpoint.
   */
  private async diagnoseSetup(): Promise<void> {
    const seq = ++this.diagnoseSeq;
    const found = await this.quietCheck();
    if (seq !== this.diagnoseSeq || this.model !== null) return;
    if (!found) {
      this.status.setNoModel(true);
      this.setupHint = setupText({ reason: 'no_model', settings: [], env: [] }, '').message;
      this.postState();
      return;
    }
    this.showSetupProblem(found);
  }

  /** What a quiet check found missing: on the status bar, the model item and the empty chat. */
  private showSetupProblem(found: { status: string; message: string; missing: boolean; model?: string }): void {
    this.status.setNoModel(false);
    this.status.setProblem({ status: found.status, message: found.message, missing: found.missing });
    this.unusable = found.model ? { model: found.model, status: found.status } : undefined;
    this.modelStatus.setProblem(this.unusable);
    this.setupHint = found.message;
    this.postState();
  }

  /**
   * qwen/checkSetup without a toast, for a setup that has no usable model
   * (so no request reaches any endpoint): what is missing, in VS Code's
   * words; undefined when the server cannot say (too old) or all is well.
   */
  private async quietCheck(): Promise<{ status: string; message: string; missing: boolean; model?: string } | undefined> {
    const client = this.ext.client;
    if (!client || client.state !== State.Running) return undefined;
    let r: ReturnType<typeof parseCheckSetup>;
    try {
      r = parseCheckSetup(await client.sendRequest('qwen/checkSetup', {}));
    } catch {
      return undefined;
    }
    if (!r || r.ok || !r.reason) return undefined;
    const problem: SetupProblem = { reason: r.reason, settings: r.settings ?? [], env: r.env ?? [], ...(r.baseUrl ? { baseUrl: r.baseUrl } : {}), ...(r.model ? { model: r.model } : {}) };
    const text = setupText(problem, r.message);
    return { ...text, missing: isMissing(problem.reason), ...(r.model ? { model: r.model } : {}) };
  }

  /** The model settings changed: what the status said about them may no longer hold. */
  modelSettingsChanged(): void {
    this.status.setProblem(undefined);
    this.status.setNoModel(false);
    this.unusable = undefined;
    this.modelStatus.setProblem(undefined);
    if (this.status.errorText === undefined) this.setupHint = null;
    this.postState();
  }

  /** A prompt failed for its model setup: the chat, the status and a toast say what to change, in VS Code's words. */
  private setupFailed(serverMessage: string, problem: SetupProblem): void {
    this.ext.output.warn(`the model setup failed (${problem.reason}): ${serverMessage}`);
    const places = fixPlaces(problem);
    const text = setupText(problem, serverMessage);
    this.post({ type: 'error', message: text.message, settings: places.vscode });
    this.status.setProblem({ status: text.status, message: text.message, missing: isMissing(problem.reason) });
    if (isMissing(problem.reason)) this.setupHint = text.message;
    showFix(text.message, places, problem);
  }

  /**
   * Qwen: Check Setup: qwen/checkSetup, reported in a toast (and the chat,
   * when it is open). With a file open, the answer also covers the code
   * intelligence the agent gets for it.
   */
  async checkSetup(): Promise<void> {
    let raw: unknown;
    const doc = vscode.window.activeTextEditor?.document;
    const file = doc && doc.uri.scheme === 'file' ? doc.uri : undefined;
    let editor: { languageId?: string; servers: string[] } | undefined;
    try {
      const client = await this.requireClient();
      if (file) editor = await this.ext.lsp.coverage(file);
      raw = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Qwen: checking the model setup…' },
        () => client.sendRequest('qwen/checkSetup', file ? { uri: client.code2ProtocolConverter.asUri(file) } : {}),
      );
    } catch (err) {
      const code = isObj(err) && typeof err.code === 'number' ? err.code : undefined;
      if (code === -32601) {
        void vscode.window.showWarningMessage('Qwen: this qwen-ls cannot check the setup (qwen/checkSetup is missing); update qwen-ls.');
        return;
      }
      void vscode.window.showErrorMessage(`Qwen: the setup check failed: ${errorText(err)}`);
      return;
    }
    const r = parseCheckSetup(raw);
    if (!r) {
      void vscode.window.showErrorMessage('Qwen: the setup check gave an answer this extension does not understand.');
      return;
    }
    const sandbox = r.sandbox ? ` ${r.sandbox.charAt(0).toUpperCase()}${r.sandbox.slice(1).replace(/\.?$/, '.')}` : '';
    const code = codeIntelligenceSummary(file ? vscode.workspace.asRelativePath(file, false) : undefined, r, editor);
    const more = `${sandbox}${code ? ` ${code}` : ''}`;
    if (r.ok) {
      this.status.setProblem(undefined);
      this.setModel(r.model);
      this.post({ type: 'notice', text: `Qwen: ${r.message}${code ? ` ${code}` : ''}` });
      void vscode.window.showInformationMessage(`Qwen: ${r.message}${more}`);
      return;
    }
    const problem: SetupProblem = {
      reason: r.reason ?? 'model_error',
      settings: r.settings ?? [],
      env: r.env ?? [],
      ...(r.baseUrl ? { baseUrl: r.baseUrl } : {}),
      ...(r.model ? { model: r.model } : {}),
    };
    this.ext.output.info(`setup check (${problem.reason}): ${r.message}`);
    const places = fixPlaces(problem);
    const text = setupText(problem, r.message);
    this.status.setProblem({ status: text.status, message: text.message, missing: isMissing(problem.reason) });
    if (isMissing(problem.reason)) this.setupHint = text.message;
    this.post({ type: 'error', message: text.message, settings: places.vscode });
    this.postState();
    showFix(text.message + more, places, problem);
  }

  async cancel(): Promise<void> {
    const client = this.ext.client;
    if (!this.sessionId || !client || client.state !== State.Running) return;
    await client.sendNotification('qwen/cancel', { sessionId: this.sessionId });
  }

  async newSession(): Promise<void> {
    if (this.busy) await this.cancel();
    this.sessionId = undefined;
    this.resetTranscript();
    try {
      await this.ensureSession();
    } catch (err) {
      this.post({ type: 'error', message: errorText(err) });
    }
  }

  private resetTranscript(): void {
    this.resetUsage();
    this.agentText.clear();
    this.thoughtText.clear();
    this.cards.clear();
    this.currentAgentId = undefined;
    this.currentThoughtId = undefined;
    this.post({ type: 'clear' });
    this.postState();
  }

  async pickSession(): Promise<void> {
    try {
      const client = await this.requireClient();
      const res = await client.sendRequest<{ sessions: { sessionId: string; cwd: string; title: string; updatedAt: string }[] }>(
        'qwen/listSessions',
        {},
      );
      if (res.sessions.length === 0) {
        void vscode.window.showInformationMessage('Qwen: no sessions yet.');
        return;
      }
      const roots = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
      const now = Date.now();
      const pick = await vscode.window.showQuickPick(
        res.sessions.map((s) => sessionItem(s, { currentId: this.sessionId, roots, now, locale: vscode.env.language })),
        { title: 'Qwen: open a session', matchOnDescription: true, matchOnDetail: true },
      );
      if (!pick || pick.sessionId === this.sessionId) return;
      if (this.busy) await this.cancel();
      this.sessionId = pick.sessionId;
      this.resetTranscript();
      const loaded = await client.sendRequest<{ approvalMode?: string; warnings?: string[] }>('qwen/loadSession', { sessionId: pick.sessionId });
      this.currentAgentId = undefined;
      if (typeof loaded?.approvalMode === 'string') {
        this.mode = loaded.approvalMode;
        this.status.setMode(loaded.approvalMode);
      }
      for (const w of loaded?.warnings ?? []) this.post({ type: 'notice', text: `Qwen: ${w}` });
      this.postState();
      void this.refreshCommands();
      // The session's file keeps the model chosen for it.
      await this.refreshModel();
    } catch (err) {
      this.post({ type: 'error', message: errorText(err) });
    }
  }

  async pickMode(): Promise<void> {
    const current = this.mode ?? approvalModeSetting();
    const descriptions: Record<string, string> = {
      default: 'Ask before edits and commands',
      plan: 'Read only: plan, change nothing',
      'auto-edit': 'Apply edits without asking; ask before commands',
      yolo: 'Run everything without asking',
    };
    // The server says which modes it has; a mode this list does not
    // describe is offered all the same.
    const modes = serverApprovalModes(this.ext.client?.initializeResult?.capabilities.experimental);
    const pick = await vscode.window.showQuickPick(
      modes.map((m) => ({ label: m, description: (m === current ? '(current) ' : '') + (descriptions[m] ?? '') })),
      { title: 'Qwen: approval mode' },
    );
    if (pick) await this.setMode(pick.label);
  }

  async setMode(mode: string): Promise<void> {
    if (!this.sessionId) {
      this.mode = mode;
      this.status.setMode(mode);
      this.postState();
      return;
    }
    try {
      const client = await this.requireClient();
      await client.sendRequest('qwen/setApprovalMode', { sessionId: this.sessionId, mode });
      this.mode = mode;
      this.status.setMode(mode);
      this.postState();
    } catch (err) {
      this.post({ type: 'error', message: errorText(err) });
    }
  }

  private async pickMention(): Promise<void> {
    const files = await vscode.workspace.findFiles('**/*', '**/{node_modules,.git}/**', 2000);
    const items = files
      .map((u) => vscode.workspace.asRelativePath(u, false))
      .sort()
      .map((label) => ({ label }));
    const pick = await vscode.window.showQuickPick(items, { title: 'Qwen: mention a file', matchOnDescription: true });
    if (pick) this.post({ type: 'insertMention', path: pick.label });
  }

  async undoTurn(): Promise<void> {
    if (!this.sessionId) {
      void vscode.window.showInformationMessage('Qwen: no session yet, nothing to undo.');
      return;
    }
    try {
      const client = await this.requireClient();
      const res = await client.sendRequest<{ restored?: string[]; removed?: string[]; conflicts?: { uri: string; diff: string }[] }>(
        'qwen/revertTurn',
        { sessionId: this.sessionId },
      );
      const name = (u: string) => vscode.workspace.asRelativePath(vscode.Uri.parse(u), false);
      const restored = (res.restored ?? []).map(name);
      const removed = (res.removed ?? []).map(name);
      const conflicts = res.conflicts ?? [];
      const parts: string[] = [];
      if (restored.length) parts.push(`restored ${restored.join(', ')}`);
      if (removed.length) parts.push(`removed ${removed.join(', ')}`);
      if (parts.length === 0 && conflicts.length === 0) parts.push('the last turn changed no file');
      const msg = `Qwen: undo last turn: ${parts.join('; ')}.`;
      this.post({ type: 'notice', text: msg });
      if (conflicts.length) {
        const a = await vscode.window.showWarningMessage(
          `${msg} ${conflicts.length} file(s) changed since and were left alone: ${conflicts.map((c) => name(c.uri)).join(', ')}.`,
          'Show Diffs',
        );
        if (a === 'Show Diffs') {
          const doc = await vscode.workspace.openTextDocument({
            language: 'diff',
            content: conflicts.map((c) => c.diff).join('\n'),
          });
          await vscode.window.showTextDocument(doc, { preview: true });
        }
      } else {
        void vscode.window.showInformationMessage(msg);
      }
    } catch (err) {
      const code = isObj(err) && typeof err.code === 'number' ? err.code : undefined;
      if (code === -32601) {
        void vscode.window.showWarningMessage('Qwen: this qwen-ls cannot undo a turn yet (qwen/revertTurn is missing); update qwen-ls.');
        return;
      }
      if (code === -32602) {
        // Nothing (left) to undo: an answer, not a failure.
        const msg = `Qwen: ${errorText(err)}.`;
        this.post({ type: 'notice', text: msg });
        void vscode.window.showInformationMessage(msg);
        return;
      }
      void vscode.window.showErrorMessage(`Qwen: undo last turn failed: ${errorText(err)}`);
    }
  }

  /** A new or another session: its totals start again. */
  private resetUsage(): void {
    this.totals = noUsage;
    this.countedTurns = 0;
    this.modelStatus.setTotals(undefined);
    this.modelStatus.setContext(undefined);
  }

  /**
   * The model picker: qwen/listModels as a QuickPick; the choice goes to
   * qwen/setModel for the chat's session (started first when there is none).
   */
  async pickModel(): Promise<void> {
    let client;
    let raw: unknown;
    try {
      client = await this.requireClient();
      raw = await client.sendRequest('qwen/listModels', this.sessionId ? { sessionId: this.sessionId } : {});
    } catch (err) {
      const code = isObj(err) && typeof err.code === 'number' ? err.code : undefined;
      if (code === -32601) {
        // A server from before the model list: the setting is the only way.
        await vscode.commands.executeCommand('workbench.action.openSettings', 'qwen.model.name');
        return;
      }
      void vscode.window.showErrorMessage(`Qwen: could not list the models: ${errorText(err)}`);
      return;
    }
    const list = parseModelList(raw);
    if (!list) {
      void vscode.window.showErrorMessage('Qwen: the model list is an answer this extension does not understand.');
      return;
    }
    if (list.models.length === 0) {
      await this.noModelPicker();
      return;
    }
    const items = modelItems(list);
    const qp = vscode.window.createQuickPick<(typeof items)[number]>();
    qp.title = 'Qwen: model';
    qp.placeholder = this.sessionId ? 'The model of this chat session' : 'The model of the next chat session';
    qp.matchOnDescription = true;
    qp.matchOnDetail = true;
    qp.items = items;
    const current = items.find((i) => i.current);
    if (current) qp.activeItems = [current];
    const pick = await new Promise<(typeof items)[number] | undefined>((resolve) => {
      qp.onDidAccept(() => resolve(qp.selectedItems[0] ?? qp.activeItems[0]));
      qp.onDidHide(() => resolve(undefined));
      qp.show();
    });
    qp.dispose();
    if (!pick || pick.current) return;
    try {
      const sessionId = await this.ensureSession();
      const res = await client.sendRequest<{ model?: unknown }>('qwen/setModel', { sessionId, modelId: pick.id });
      if (sessionId === this.sessionId) this.setModel(typeof res?.model === 'string' ? res.model : pick.id);
    } catch (err) {
      // -32602: an id the settings no longer offer; the message names the ones they do.
      void vscode.window.showErrorMessage(`Qwen: ${errorText(err)}`);
    }
  }

  /** No model is configured: the picker says so and offers the way to set one up. */
  private async noModelPicker(): Promise<void> {
    const items = [
      { label: '$(gear) Open Settings', detail: 'Set qwen.model.name and qwen.model.baseUrl', action: 'settings' },
      { label: '$(pulse) Check Setup', detail: 'Ask qwen-ls what is missing', action: 'check' },
    ];
    const pick = await vscode.window.showQuickPick(items, {
      title: 'Qwen: no model is configured',
      placeHolder: 'No model is configured: set qwen.model.name and qwen.model.baseUrl, or list models under modelProviders in ~/.qwen/settings.json',
    });
    if (pick?.action === 'settings') await vscode.commands.executeCommand('workbench.action.openSettings', 'qwen.model');
    else if (pick?.action === 'check') await this.checkSetup();
  }

  /**
   * qwen.model.* changed (and the server has the new settings). The status
   * follows: when the settings VS Code can see give no key and no endpoint
   * (or a remote endpoint without a key), a quiet setup check says what is
   * missing; with nothing usable it sends no request to any endpoint. A
   * change of qwen.model.name is applied to the chat's session too, even
   * after a model was picked for it (qwen/setModel), and the chat says
   * what happened, or why the session keeps its model.
   */
  async applyModelSettings(nameChanged: boolean): Promise<void> {
    const client = this.ext.client;
    if (!client || client.state !== State.Running) return;
    let def: string | null;
    try {
      def = parseModelList(await client.sendRequest('qwen/listModels', {}))?.current ?? null;
    } catch {
      return this.refreshModel(); // a server without qwen/listModels
    }
    // listModels names the configured model even when it lacks its key or endpoint.
    const found = def === null || !(await this.ext.keyOrEndpointSet()) ? await this.quietCheck() : undefined;
    if (found) def = null;
    const sessionId = this.sessionId;
    let before: string | null = null;
    if (sessionId) {
      try {
        before = parseModelList(await client.sendRequest('qwen/listModels', { sessionId }))?.current ?? null;
      } catch {
        before = this.model;
      }
    }
    let after = sessionId ? before : def;
    let error: string | undefined;
    if (nameChanged && sessionId && def !== null && before !== def) {
      try {
        const res = await client.sendRequest<{ model?: unknown }>('qwen/setModel', { sessionId, modelId: def });
        after = typeof res?.model === 'string' ? res.model : def;
      } catch (err) {
        error = errorText(err);
      }
    }
    if (sessionId !== this.sessionId) return; // another session meanwhile: it has its own model
    if (found && (!sessionId || before === null || before === found.model)) {
      // Nothing this chat could use: say what is missing, as at start.
      this.model = null;
      this.modelStatus.setModel(null);
      this.showSetupProblem(found);
    } else {
      this.setModel(after ?? def);
    }
    if (!nameChanged) return;
    const name = vscode.workspace.getConfiguration('qwen').get<string>('model.name', '').trim();
    const notice = modelNameNotice({ name, def, session: sessionId !== undefined, before, after, error, problem: found?.status });
    this.post({ type: 'notice', text: notice });
    if (!this.chat.visible) void vscode.window.showInformationMessage(notice);
  }

  /** The settings changed: the session's model may have changed with them. */
  async refreshModel(): Promise<void> {
    const client = this.ext.client;
    if (!client || client.state !== State.Running) return;
    try {
      const list = parseModelList(await client.sendRequest('qwen/listModels', this.sessionId ? { sessionId: this.sessionId } : {}));
      if (list) this.setModel(list.current);
    } catch {
      // A server without qwen/listModels: the next session says.
    }
  }

  /**
   * qwen/listCommands (for the chat's session when there is one) into the
   * chat's "/" list. Starts qwen-ls when it is not running. A server
   * without commands (-32601) offers an empty list.
   */
  async refreshCommands(): Promise<void> {
    const client = await this.ext.ensureClient().catch(() => undefined);
    if (!client) {
      this.setCommands([]);
      return;
    }
    const asked = this.sessionId;
    try {
      const res = await client.sendRequest('qwen/listCommands', asked ? { sessionId: asked } : {});
      if (asked !== this.sessionId) return; // another session meanwhile: its own list follows
      this.setCommands(parseCommands(res));
    } catch (err) {
      const code = isObj(err) && typeof err.code === 'number' ? err.code : undefined;
      if (code !== -32601) this.ext.output.warn(`qwen/listCommands failed: ${errorText(err)}`);
      this.setCommands([]);
    }
  }

  /** The slash commands the server offers (qwen/listCommands, then available_commands_update) go to the chat's "/" list. */
  private setCommands(list: SlashCommand[]): void {
    this.post({ type: 'commands', commands: list });
  }

  awaitingUser(what: string): void {
    this.status.setTool(what);
    this.postState();
  }

  serverStopped(): void {
    this.sessionId = undefined;
    this.resetUsage();
    if (this.busy) {
      this.busy = false;
      this.status.setBusy(false);
    }
    this.postState();
  }

  /** One qwen/sessionUpdate notification (protocol.md §5). */
  sessionUpdate(p: unknown): void {
    if (!isObj(p) || typeof p.sessionId !== 'string' || !isObj(p.update)) return;
    const u = p.update;
    // The list may come before the new session's answer names it.
    if (u.sessionUpdate === 'available_commands_update' && (this.sessionId === undefined || p.sessionId === this.sessionId)) {
      if (Array.isArray(u.availableCommands)) this.setCommands(parseCommands(u.availableCommands));
      return;
    }
    if (p.sessionId !== this.sessionId) return;
    switch (u.sessionUpdate) {
      case 'history_cleared': {
        // /clear: the same session, an empty history; the conversation so far is a session of its own on disk.
        this.clearedInTurn = this.busy;
        this.resetTranscript();
        this.post({ type: 'notice', text: 'Qwen: the conversation was cleared. The earlier one is saved: Open Session… lists it.' });
        return;
      }
      case 'agent_message_chunk': {
        const text = isObj(u.content) && typeof u.content.text === 'string' ? u.content.text : '';
        if (!this.currentAgentId) this.currentAgentId = `a${++this.messageSeq}`;
        const id = this.currentAgentId;
        const all = (this.agentText.get(id) ?? '') + text;
        this.agentText.set(id, all);
        this.currentThoughtId = undefined;
        this.post({ type: 'agent', id, html: md.render(all) });
        return;
      }
      case 'agent_thought_chunk': {
        const text = isObj(u.content) && typeof u.content.text === 'string' ? u.content.text : '';
        if (!this.currentThoughtId) this.currentThoughtId = `t${++this.messageSeq}`;
        const id = this.currentThoughtId;
        const all = (this.thoughtText.get(id) ?? '') + text;
        this.thoughtText.set(id, all);
        this.post({ type: 'thought', id, text: all });
        return;
      }
      case 'user_message_chunk': {
        const text = isObj(u.content) && typeof u.content.text === 'string' ? u.content.text : '';
        this.currentAgentId = undefined;
        // The server replays the prompt as the user wrote it, without its notes for the model.
        this.post({ type: 'user', text });
        return;
      }
      case 'tool_call':
      case 'tool_call_update': {
        if (typeof u.toolCallId !== 'string') return;
        const prev = this.cards.get(u.toolCallId);
        const card: ToolCard = prev ?? { id: u.toolCallId, title: '', kind: 'other', status: 'pending' };
        if (typeof u.title === 'string') card.title = u.title;
        if (typeof u.kind === 'string') card.kind = u.kind;
        if (typeof u.status === 'string') card.status = u.status;
        const outcome = toolOutcome(card.status, u._meta);
        if (outcome) card.outcome = outcome;
        // A review decided hunk by hunk, and the undo of the call's turn (an
        // update without content: the card keeps what it shows).
        const end = callEnd(card.status, u._meta);
        if (end.review) card.review = end.review;
        if (end.undone) card.undone = true;
        if (Array.isArray(u.content)) {
          const texts: string[] = [];
          const diffs: NonNullable<ToolCard['diffs']> = [];
          for (const c of u.content) {
            if (!isObj(c)) continue;
            if (c.type === 'content' && isObj(c.content) && typeof c.content.text === 'string') texts.push(c.content.text);
            if (c.type === 'diff' && typeof c.path === 'string' && typeof c.newText === 'string') {
              diffs.push({ path: c.path, oldText: typeof c.oldText === 'string' ? c.oldText : null, newText: c.newText });
            }
          }
          card.output = texts.length ? texts.join('\n') : undefined;
          card.diffs = diffs.length ? diffs : undefined;
        }
        this.cards.set(card.id, card);
        // Text after a tool call starts a new message below its card.
        this.currentAgentId = undefined;
        this.currentThoughtId = undefined;
        if (this.busy) this.status.setTool(card.status === 'completed' || card.status === 'failed' ? undefined : card.title || card.kind);
        this.post({ type: 'tool', card: { ...card } });
        this.postState();
        return;
      }
      case 'plan': {
        if (!Array.isArray(u.entries)) return;
        const entries: PlanEntry[] = u.entries.filter(isObj).map((e) => ({
          content: typeof e.content === 'string' ? e.content : '',
          status: typeof e.status === 'string' ? e.status : 'pending',
          priority: typeof e.priority === 'string' ? e.priority : 'medium',
        }));
        this.post({ type: 'plan', entries });
        return;
      }
      case 'current_model_update': {
        if (typeof u.modelId === 'string' && u.modelId !== '') this.setModel(u.modelId);
        return;
      }
      case 'usage_update': {
        if (typeof u.used === 'number' && typeof u.size === 'number') this.modelStatus.setContext(formatContext(u.used, u.size));
        return;
      }
      case 'current_mode_update': {
        if (typeof u.currentModeId === 'string') {
          this.mode = u.currentModeId;
          this.status.setMode(u.currentModeId);
          this.postState();
        }
        return;
      }
      default:
        return;
    }
  }
}

/** An error toast whose buttons open the settings to change (filtered to them) or set the key. */
export function showFix(message: string, places: ReturnType<typeof fixPlaces>, problem?: SetupProblem): void {
  const actions = [...fixActions(places, problem), 'Check Setup'];
  void vscode.window.showErrorMessage(`Qwen: ${message}`, ...actions).then((a) => {
    if (a === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', settingsQueryFor(places.vscode));
    else if (a === 'Set API Key') void vscode.commands.executeCommand('qwen.setApiKey');
    else if (a === 'Check Setup') void vscode.commands.executeCommand('qwen.checkSetup');
  });
}
