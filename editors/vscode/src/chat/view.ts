// The chat webview view. Its HTML loads one script, with a nonce, under a
// Content Security Policy that allows nothing else (no inline script, no
// inline style, no network). Messages from it are checked by
// parseWebviewMessage before the extension acts on them.
import * as vscode from 'vscode';
import * as crypto from 'crypto';
import { HostMessage, parseWebviewMessage, WebviewMessage } from './protocol';

export class ChatViewProvider implements vscode.WebviewViewProvider {
  static readonly viewId = 'qwen.chat';
  private view: vscode.WebviewView | undefined;
  private ready = false;
  /** What the view shows, replayed when it is (re)created. */
  private transcript: HostMessage[] = [];
  private readonly listeners: ((m: WebviewMessage) => void)[] = [];
  /** A focusQuestion asked for before the view was ready: delivered once it is. */
  private pendingFocus: HostMessage | undefined;
  private readonly visibleEmitter = new vscode.EventEmitter<boolean>();
  /** Fires when the chat comes on screen or leaves it. */
  readonly onDidChangeVisible = this.visibleEmitter.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** True while the chat is on screen. */
  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  onMessage(fn: (m: WebviewMessage) => void): void {
    this.listeners.push(fn);
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    view.webview.html = this.html(view.webview);
    view.webview.onDidReceiveMessage((raw: unknown) => {
      const m = parseWebviewMessage(raw);
      if (!m) {
        this.log.warn(`dropped an invalid message from the chat view: ${JSON.stringify(raw)?.slice(0, 200)}`);
        return;
      }
      if (m.type === 'ready') {
        this.ready = true;
        for (const t of this.transcript) void view.webview.postMessage(t);
        if (this.pendingFocus) void view.webview.postMessage(this.pendingFocus);
        this.pendingFocus = undefined;
      }
      for (const l of this.listeners) l(m);
    });
    view.onDidChangeVisibility(() => this.visibleEmitter.fire(view.visible));
    view.onDidDispose(() => {
      if (this.view === view) {
        this.view = undefined;
        this.ready = false;
        this.visibleEmitter.fire(false);
      }
    });
    this.visibleEmitter.fire(view.visible);
  }

  post(m: HostMessage): void {
    this.remember(m);
    if (this.view && this.ready) void this.view.webview.postMessage(m);
    else if (m.type === 'focusQuestion') this.pendingFocus = m;
  }

  private remember(m: HostMessage): void {
    switch (m.type) {
      case 'clear':
        // The command list belongs to the server, not to the conversation.
        this.transcript = this.transcript.filter((t) => t.type === 'commands');
        return;
      case 'state':
      case 'reviews':
      case 'commands':
        this.transcript = this.transcript.filter((t) => t.type !== m.type);
        break;
      case 'plan': {
        // One plan per turn, updated where it first appeared.
        let i = this.transcript.length - 1;
        while (i >= 0 && this.transcript[i].type !== 'plan' && this.transcript[i].type !== 'user') i--;
        if (i >= 0 && this.transcript[i].type === 'plan') {
          this.transcript[i] = m;
          return;
        }
        break;
      }
      case 'agent':
      case 'thought': {
        const i = this.transcript.findIndex((t) => t.type === m.type && t.id === m.id);
        if (i >= 0) {
          this.transcript[i] = m;
          return;
        }
        break;
      }
      case 'tool': {
        const i = this.transcript.findIndex((t) => t.type === 'tool' && t.card.id === m.card.id);
        if (i >= 0) {
          this.transcript[i] = m;
          return;
        }
        break;
      }
      case 'insertMention':
      case 'focusQuestion':
        return;
    }
    this.transcript.push(m);
  }

  private html(webview: vscode.Webview): string {
    const nonce = crypto.randomBytes(18).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'chat.css'));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `font-src ${webview.cspSource}`,
      `img-src ${webview.cspSource} data:`,
      `script-src 'nonce-${nonce}'`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>Qwen</title>
</head>
<body>
<header id="toolbar">
  <span id="status" aria-live="polite">idle</span>
  <button id="model" type="button" hidden></button>
</header>
<main id="log" aria-live="polite"></main>
<section id="empty" hidden>
  <p id="empty-text"></p>
  <div id="empty-actions"></div>
</section>
<div id="reviews" hidden></div>
<form id="form">
  <div id="slash" role="listbox" aria-label="Commands" hidden></div>
  <textarea id="prompt" rows="3" placeholder="Ask Qwen… (/ runs a command, @ mentions a file, Enter sends, Shift+Enter adds a line)" aria-label="Prompt" aria-autocomplete="list" aria-controls="slash" aria-expanded="false"></textarea>
  <div id="held" role="status" hidden>Qwen is still working: Enter sends once the turn ends (or after Stop). Your text stays here.</div>
  <div id="actions">
    <button id="mention" type="button" title="Mention a file">@</button>
    <span class="spacer"></span>
    <button id="stop" type="button" title="Stop (cancel the running turn)" disabled>Stop</button>
    <button id="send" type="submit">Send</button>
  </div>
</form>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }
}
