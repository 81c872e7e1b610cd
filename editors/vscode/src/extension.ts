// The Qwen extension: starts qwen-ls through vscode-languageclient and
// wires its agent protocol (protocol.md §4–6) to the chat view, the inline
// review of proposed edits, permission prompts and the status bar.
import * as vscode from 'vscode';
import {
  ClientCapabilities,
  CloseAction,
  ErrorHandler,
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  StaticFeature,
  TransportKind,
} from 'vscode-languageclient/node';
import { resolveServerPath } from './serverPath';
import { ChatViewProvider } from './chat/view';
import { Agent, AgentHost } from './agent';
import { ReviewController, ProposeEditParams } from './review/controller';
import { askMessage, askPermission, PermissionParams } from './permission';
import { Questions } from './questions';
import { ModelStatusBar, SandboxInfo, StatusBar } from './status';
import { approvalModeSetting } from './settings';
import { EditorLsp } from './lsp/handler';
import { endpointReachable } from './setup';

const secretKey = 'qwen.apiKey';

/**
 * Advertises the rich-client capabilities of protocol.md §2: direct review,
 * no deferral, and qwen/lsp answered from VS Code's language features.
 */
class QwenCapabilities implements StaticFeature {
  fillClientCapabilities(caps: ClientCapabilities): void {
    caps.experimental = {
      ...(caps.experimental as object | undefined),
      qwen: { sessionUpdates: true, requestPermission: true, proposeEdit: true, lsp: true },
    };
  }
  initialize(): void {}
  getState(): { kind: 'static' } {
    return { kind: 'static' };
  }
  clear(): void {}
}

function modelSettings(): { name?: string; baseUrl?: string } | undefined {
  const cfg = vscode.workspace.getConfiguration('qwen');
  const name = cfg.get<string>('model.name', '').trim();
  const baseUrl = cfg.get<string>('model.baseUrl', '').trim();
  const m: { name?: string; baseUrl?: string } = {};
  if (name !== '') m.name = name;
  if (baseUrl !== '') m.baseUrl = baseUrl;
  return Object.keys(m).length > 0 ? m : undefined;
}


/** The qwen settings.json keys the editor's own settings stand for. */
function editorSettings(): Record<string, unknown> {
  const settings: Record<string, unknown> = { tools: { approvalMode: approvalModeSetting() } };
  const model = modelSettings();
  if (model) settings.model = model;
  return settings;
}

/**
 * The language client, whose own messages ("couldn't create connection to
 * server", "connection to server is erroring", "Sending document
 * notification … failed", "server crashed 5 times") go to the output
 * channel only, even those it would force on screen: the extension says
 * what went wrong once, in its own words, naming qwen.serverPath
 * (Extension.serverMissing) or the setting to change.
 */
class QuietLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown): void {
    super.error(message, data, false);
  }
  override warn(message: string, data?: unknown): void {
    super.warn(message, data, false);
  }
  override info(message: string, data?: unknown): void {
    super.info(message, data, false);
  }
}

export class Extension implements vscode.Disposable, AgentHost {
  client: LanguageClient | undefined;
  readonly output = vscode.window.createOutputChannel('Qwen', { log: true });
  readonly status: StatusBar;
  readonly modelStatus: ModelStatusBar;
  readonly agent: Agent;
  readonly review: ReviewController;
  readonly chat: ChatViewProvider;
  /** Every question to the person: on its card in the chat, a notification only while the chat is hidden. */
  readonly questions: Questions;
  /** Answers qwen/lsp; lives as long as the extension, so diagnostics versions are tracked across server restarts. */
  readonly lsp: EditorLsp;
  private readonly disposables: vscode.Disposable[] = [];
  private focusTimer: NodeJS.Timeout | undefined;
  private starting: Promise<LanguageClient | undefined> | undefined;
  /** The missing-binary message already shown, so that every retry does not toast again. */
  private missingShown: string | undefined;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.status = new StatusBar();
    this.modelStatus = new ModelStatusBar();
    this.chat = new ChatViewProvider(context.extensionUri, this.output);
    this.questions = new Questions(this.chat, this.output);
    this.agent = new Agent(this, this.chat, this.status, this.modelStatus);
    this.review = new ReviewController(this.output);
    this.lsp = new EditorLsp(() => {
      if (!this.client) throw new Error('qwen-ls is not running');
      return this.client.code2ProtocolConverter;
    }, context.extension.id);
    this.disposables.push(this.output, this.status, this.modelStatus, this.review, this.lsp, this.questions);
  }

  async activate(): Promise<void> {
    const c = this.context;
    c.subscriptions.push(
      this,
      vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, this.chat, {
        webviewOptions: { retainContextWhenHidden: true },
      }),
      vscode.commands.registerCommand('qwen.openChat', () => vscode.commands.executeCommand('qwen.chat.focus')),
      vscode.commands.registerCommand('qwen.newSession', () => this.agent.newSession()),
      vscode.commands.registerCommand('qwen.listSessions', () => this.agent.pickSession()),
      vscode.commands.registerCommand('qwen.cancel', () => this.agent.cancel()),
      vscode.commands.registerCommand('qwen.setApprovalMode', () => this.agent.pickMode()),
      vscode.commands.registerCommand('qwen.setApiKey', () => this.setApiKey()),
      vscode.commands.registerCommand('qwen.clearApiKey', () => this.clearApiKey()),
      vscode.commands.registerCommand('qwen.undoTurn', () => this.agent.undoTurn()),
      vscode.commands.registerCommand('qwen.restartServer', () => this.restart()),
      vscode.commands.registerCommand('qwen.checkSetup', () => this.agent.checkSetup()),
      vscode.commands.registerCommand('qwen.pickModel', () => this.agent.pickModel()),
      vscode.commands.registerCommand('qwen.focusQuestion', () => this.questions.reveal()),
      vscode.commands.registerCommand('qwen.openSettings', () => vscode.commands.executeCommand('workbench.action.openSettings', '@ext:qwen-ls.qwen-ls')),
      this.review.onDidChangePending((reviews) => {
        this.status.setReviews(reviews);
        this.chat.post({ type: 'reviews', reviews });
        this.agent.refreshState();
      }),
      this.questions.onDidChange((n) => void vscode.commands.executeCommand('setContext', 'qwen.questionPending', n > 0)),
      vscode.workspace.onDidChangeConfiguration((e) => this.configurationChanged(e)),
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        this.status.setTrusted(true);
        void vscode.window
          .showInformationMessage('Qwen: the workspace is now trusted. Restart qwen-ls to use its workspace settings?', 'Restart')
          .then((a) => (a === 'Restart' ? this.restart() : undefined));
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.scheduleFocus()),
      vscode.window.onDidChangeTextEditorSelection(() => this.scheduleFocus()),
    );
    this.review.register(c);
    this.review.notifyWhen = () => !this.chat.visible;
    this.chat.onMessage((m) => {
      if (m.type === 'answer') this.questions.answer(m.id, m.optionId);
      else void this.agent.fromWebview(m);
    });
    this.status.setTrusted(vscode.workspace.isTrusted);
    await this.ensureClient();
  }

  /** Starts qwen-ls if it is not running; resolves to undefined when it cannot start. */
  ensureClient(): Promise<LanguageClient | undefined> {
    if (this.client && this.client.state === State.Running) return Promise.resolve(this.client);
    if (!this.starting) {
      this.starting = this.start().finally(() => (this.starting = undefined));
    }
    return this.starting;
  }

  private async start(): Promise<LanguageClient | undefined> {
    const cfg = vscode.workspace.getConfiguration('qwen');
    // In a restricted workspace the setting comes only from the user
    // (restrictedConfigurations in package.json), never from the folder.
    const found = resolveServerPath(cfg.get<string>('serverPath', ''), process.env.PATH, this.context.extensionPath);
    if ('error' in found) {
      this.status.setError(found.error);
      this.serverMissing(found.error);
      return undefined;
    }
    this.output.info(`starting ${found.path} (from ${found.from})`);
    const env: NodeJS.ProcessEnv = { ...process.env };
    const secret = await this.context.secrets.get(secretKey);
    if (secret) env.OPENAI_API_KEY = secret; // reaches the server only through its environment
    const serverOptions: ServerOptions = {
      command: found.path,
      transport: TransportKind.stdio,
      options: { env },
    };
    const trusted = vscode.workspace.isTrusted;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.output,
      // The language client's own failures ("Sending document notification
      // textDocument/didSave failed." while the server stops or cannot
      // start) go to the output channel only: the person gets one message,
      // in this extension's words (serverMissing, the chat's errors).
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: () => {
        const opts: Record<string, unknown> = { approvalMode: approvalModeSetting(), workspaceTrusted: trusted };
        const model = modelSettings();
        if (model) opts.model = model;
        return opts;
      },
      // No toast here: client.start() rejects, and its catch below says it once.
      initializationFailedHandler: (err) => {
        this.output.error(`qwen-ls failed to initialize: ${err instanceof Error ? err.message : String(err)}`);
        return false;
      },
    };
    // The language client's own restart policy (a crashed server restarts,
    // up to 4 times in 3 minutes), seen from here: whether it gave up on a
    // server that had run.
    let ran = false;
    let gaveUp = false;
    let policy: ErrorHandler | undefined;
    clientOptions.errorHandler = {
      error: (error, message, count) => policy!.error(error, message, count),
      closed: async () => {
        const r = await policy!.closed();
        if (r.action === CloseAction.DoNotRestart && ran) gaveUp = true;
        return r;
      },
    };
    const client = new QuietLanguageClient('qwen', 'Qwen (qwen-ls)', serverOptions, clientOptions);
    policy = client.createDefaultErrorHandler(4);
    client.registerFeature(new QwenCapabilities());
    client.onNotification('qwen/sessionUpdate', (p: unknown) => this.agent.sessionUpdate(p));
    client.onNotification('qwen/reviewCancelled', () => {
      /* only sent to deferredReview clients; this one answers directly */
    });
    client.onRequest('qwen/requestPermission', async (p: PermissionParams, token) => {
      this.status.waiting(true);
      this.agent.awaitingUser(p.toolCall?.title ?? 'permission');
      try {
        const res = await askPermission(p, token, this.questions);
        if (token.isCancellationRequested) return new ResponseError(-32800, 'the turn was cancelled');
        return res;
      } finally {
        this.status.waiting(false);
        this.agent.refreshState();
      }
    });
    // The language client would ask in a notification of its own; this one
    // asks in the chat, as every other question (src/questions.ts).
    client.onRequest('window/showMessageRequest', async (p: { type?: number; message?: string; actions?: { title: string }[] | null }, token) => {
      const hasChoice = Array.isArray(p?.actions) && p.actions.length > 0;
      if (hasChoice) this.status.waiting(true);
      try {
        return await askMessage(p, token, this.questions);
      } finally {
        if (hasChoice) this.status.waiting(false);
        this.agent.refreshState();
      }
    });
    client.onRequest('qwen/proposeEdit', async (p: ProposeEditParams, token) => {
      this.status.waiting(true);
      this.agent.awaitingUser(p.title ?? 'edit');
      try {
        const res = await this.review.propose(p, token);
        if (token.isCancellationRequested) return new ResponseError(-32800, 'the turn was cancelled');
        return res;
      } finally {
        this.status.waiting(false);
        this.agent.refreshState();
      }
    });
    client.onRequest('qwen/lsp', (p: unknown, token) => this.lsp.handle(p, token));
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) ran = true;
      if (e.newState !== State.Stopped) return;
      this.agent.serverStopped();
      // It ran, crashed, and the language client gave up restarting it.
      // Said once, here; a failed start is said by start().
      if (gaveUp && this.client === client) {
        this.client = undefined;
        const msg = 'qwen-ls stopped unexpectedly and was not restarted (the Qwen output has its last words). Run "Qwen: Restart Server", or check qwen.serverPath.';
        this.status.setError(msg);
        this.serverMissing(msg);
      }
    });
    this.client = client;
    try {
      await client.start();
    } catch (err) {
      // A client that failed to start keeps nothing: the next attempt makes a new one.
      if (this.client === client) this.client = undefined;
      void client.dispose().catch(() => undefined);
      const why = err instanceof Error ? err.message : String(err);
      this.output.error(`qwen-ls (${found.path}) did not start: ${why}`);
      // A process that exits at once shows up as a broken pipe or a
      // disposed connection, worded differently from one try to the next:
      // one sentence for all, so that retries do not toast again.
      const said = /EPIPE|ECONNRESET|disposed|closed|destroyed|write after/i.test(why) ? 'it exited before it answered (its output is in the Qwen output channel)' : why;
      const msg = `qwen-ls (${found.path}, from ${found.from === 'setting' ? 'qwen.serverPath' : found.from}) did not start: ${said}`;
      this.status.setError(msg);
      // One toast per binary that fails to start, however each try words its failure.
      this.serverMissing(`${msg}. Check qwen.serverPath, or clear it to use the bundled qwen-ls (or the one on PATH).`, `start ${found.path}`);
      return undefined;
    }
    this.status.setError(undefined);
    this.missingShown = undefined;
    const model = (client.initializeResult?.capabilities.experimental as { qwen?: { model?: string | null } } | undefined)?.qwen?.model;
    this.agent.setModel(model);
    const sandbox = (client.initializeResult?.capabilities.experimental as { qwen?: { sandbox?: SandboxInfo } } | undefined)?.qwen?.sandbox;
    this.status.setSandbox(sandbox);
    this.scheduleFocus();
    void this.agent.refreshCommands();
    return client;
  }

  /** One toast per cause (a message, or the binary that failed to start) for a server that cannot start, naming qwen.serverPath, with Open Settings. */
  private serverMissing(message: string, cause = message): void {
    this.agent.serverUnavailable(message);
    if (this.missingShown === cause) return;
    this.missingShown = cause;
    void vscode.window.showErrorMessage(`Qwen: ${message}`, 'Open Settings').then((a) => {
      if (a !== 'Open Settings') return;
      // A machine setting: in a remote window (SSH, code-server) it lives in the remote's settings.
      if (vscode.env.remoteName) void vscode.commands.executeCommand('workbench.action.openRemoteSettings', { query: 'qwen.serverPath' });
      else void vscode.commands.executeCommand('workbench.action.openSettings', 'qwen.serverPath');
    });
  }

  async restart(): Promise<void> {
    const old = this.client;
    this.client = undefined;
    this.agent.serverStopped();
    if (old) await old.stop().catch(() => undefined);
    await this.ensureClient();
  }

  private configurationChanged(e: vscode.ConfigurationChangeEvent): void {
    if (e.affectsConfiguration('qwen.serverPath')) {
      this.missingShown = undefined;
      void this.restart();
      return;
    }
    if (e.affectsConfiguration('qwen.model')) this.agent.modelSettingsChanged();
    if ((e.affectsConfiguration('qwen.model') || e.affectsConfiguration('qwen.approvalMode')) && this.client?.state === State.Running) {
      // Replaces what initializationOptions gave (protocol.md §10); the
      // approval mode is the one new sessions start in.
      void this.client
        .sendNotification('workspace/didChangeConfiguration', { settings: editorSettings() })
        .then(() => (e.affectsConfiguration('qwen.model') ? this.agent.applyModelSettings(e.affectsConfiguration('qwen.model.name')) : undefined));
    }
    if (e.affectsConfiguration('qwen.approvalMode')) this.status.setMode(this.agent.mode ?? approvalModeSetting());
  }

  private scheduleFocus(): void {
    if (this.focusTimer) clearTimeout(this.focusTimer);
    this.focusTimer = setTimeout(() => this.sendFocus(), 150);
  }

  private sendFocus(): void {
    const client = this.client;
    const editor = vscode.window.activeTextEditor;
    if (!client || client.state !== State.Running || !editor || editor.document.uri.scheme !== 'file') return;
    const sel = editor.selection;
    void client
      .sendNotification('qwen/didFocus', {
        uri: client.code2ProtocolConverter.asUri(editor.document.uri),
        selection: {
          start: { line: sel.start.line, character: sel.start.character },
          end: { line: sel.end.line, character: sel.end.character },
        },
      })
      .catch(() => undefined);
  }

  async keyOrEndpointSet(): Promise<boolean> {
    const base = vscode.workspace.getConfiguration('qwen').get<string>('model.baseUrl', '').trim();
    const key = !!(await this.context.secrets.get(secretKey)) || !!process.env.OPENAI_API_KEY || !!process.env.DASHSCOPE_API_KEY;
    return endpointReachable(base, key, process.env.OPENAI_BASE_URL);
  }

  private async setApiKey(): Promise<void> {
    const key = await vscode.window.showInputBox({
      title: 'Qwen: API key',
      prompt: 'Stored in VS Code\'s secret storage and passed to qwen-ls as OPENAI_API_KEY when it starts.',
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined || key.trim() === '') return;
    await this.context.secrets.store(secretKey, key.trim());
    await this.restart();
    void vscode.window.showInformationMessage('Qwen: API key saved; qwen-ls restarted with it.');
  }

  private async clearApiKey(): Promise<void> {
    await this.context.secrets.delete(secretKey);
    await this.restart();
  }

  dispose(): void {
    if (this.focusTimer) clearTimeout(this.focusTimer);
    for (const d of this.disposables) d.dispose();
  }
}

let ext: Extension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  ext = new Extension(context);
  await ext.activate();
}

export async function deactivate(): Promise<void> {
  const client = ext?.client;
  ext = undefined;
  if (client) await client.stop().catch(() => undefined);
}
