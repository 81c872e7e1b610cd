// Every question the agent puts to the person goes through here: a
// permission (qwen/requestPermission), a plan approval (the same request for
// exit_plan_mode) and a message request of the server
// (window/showMessageRequest, such as "Trust this folder"). The rule
// (docs/design.md, "Questions go to the person, never to the keyboard"):
//
// - The question is asked in the chat, on its tool's card, with a button per
//   option. It never takes focus: only a click, or a key given to the card
//   once the person moved focus there, answers it.
// - Only while the chat is hidden does a notification ask as well, and only
//   after the person has stopped typing in an editor for typingQuietMs. A
//   notification never takes focus either, so typing cannot answer it.
// - Closing the notification answers nothing: the question stays on its
//   card, and the status bar item leads there.
import * as vscode from 'vscode';
import { answeredText, notificationButtons, notificationText, Question, QuestionOption, showInChat, typingWait } from './question';
import type { HostMessage } from './chat/protocol';

/** What the questions need of the chat view. */
export interface QuestionChat {
  readonly visible: boolean;
  readonly onDidChangeVisible: vscode.Event<boolean>;
  post(m: HostMessage): void;
}

interface Open {
  q: Question;
  resolve: (option: QuestionOption | undefined) => void;
  timer: NodeJS.Timeout | undefined;
  notified: boolean;
}

export class Questions implements vscode.Disposable {
  private readonly open = new Map<string, Open>();
  private seq = 0;
  /** When the person last changed text in the active editor (ms), if ever. */
  private lastTyped: number | undefined;
  private readonly changedEmitter = new vscode.EventEmitter<number>();
  /** Fires with the number of open questions whenever it changes. */
  readonly onDidChange = this.changedEmitter.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly chat: QuestionChat,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      this.changedEmitter,
      vscode.workspace.onDidChangeTextDocument((e) => {
        // Typing is a change to the document the person works in: output
        // channels, other files the agent or a formatter changes, do not count.
        if (e.contentChanges.length > 0 && e.document === vscode.window.activeTextEditor?.document) this.lastTyped = Date.now();
      }),
      this.chat.onDidChangeVisible(() => {
        for (const o of this.open.values()) this.schedule(o);
      }),
    );
  }

  /** The number of questions waiting for an answer. */
  get count(): number {
    return this.open.size;
  }

  /**
   * Asks q (without its id) and resolves with the option the person chose,
   * or undefined when the token was cancelled first (the turn stopped).
   */
  ask(q: Omit<Question, 'id'>, token: vscode.CancellationToken): Promise<QuestionOption | undefined> {
    const question: Question = { ...q, id: `q${++this.seq}` };
    return new Promise((resolve) => {
      const o: Open = { q: question, resolve: () => undefined, timer: undefined, notified: false };
      let sub: vscode.Disposable | undefined;
      o.resolve = (option) => {
        if (!this.open.has(question.id)) return;
        this.open.delete(question.id);
        if (o.timer) clearTimeout(o.timer);
        sub?.dispose();
        this.chat.post({ type: 'questionDone', id: question.id, text: answeredText(option) });
        this.changedEmitter.fire(this.open.size);
        resolve(option);
      };
      this.open.set(question.id, o);
      if (token.isCancellationRequested) {
        o.resolve(undefined);
        return;
      }
      sub = token.onCancellationRequested(() => o.resolve(undefined));
      this.chat.post({ type: 'question', question });
      this.changedEmitter.fire(this.open.size);
      this.schedule(o);
    });
  }

  /** An answer from the chat: a click on an option, or a key given to its card. */
  answer(id: string, optionId: string): void {
    const o = this.open.get(id);
    if (!o) return; // already answered elsewhere, or withdrawn
    const option = o.q.options.find((x) => x.optionId === optionId);
    if (!option) {
      this.log.warn(`the chat answered question ${id} with an option it does not have: ${optionId}`);
      return;
    }
    o.resolve(option);
  }

  /**
   * Brings the person to a question (the oldest open one without id): the
   * chat, with focus on its first option. Only on the person's request.
   */
  async reveal(id?: string): Promise<void> {
    const o = id !== undefined ? this.open.get(id) : (this.open.values().next().value as Open | undefined);
    await vscode.commands.executeCommand('qwen.chat.focus');
    if (o) this.chat.post({ type: 'focusQuestion', id: o.q.id });
  }

  /**
   * The notification, when the chat is hidden: once the person has not
   * typed for typingQuietMs, never while they type.
   */
  private schedule(o: Open): void {
    if (o.timer) clearTimeout(o.timer);
    o.timer = undefined;
    if (o.notified || !this.open.has(o.q.id) || this.chat.visible) return;
    const wait = typingWait(this.lastTyped, Date.now());
    if (wait > 0) {
      o.timer = setTimeout(() => this.schedule(o), wait);
      return;
    }
    o.notified = true;
    const buttons = notificationButtons(o.q.options);
    void vscode.window.showWarningMessage(notificationText(o.q), ...buttons).then((choice) => {
      if (choice === undefined) return; // closed: the question stays on its card
      if (choice === showInChat) {
        void this.reveal(o.q.id);
        return;
      }
      const option = o.q.options.find((x) => x.name === choice);
      if (option) this.answer(o.q.id, option.optionId);
    });
  }

  dispose(): void {
    for (const o of [...this.open.values()]) o.resolve(undefined);
    for (const d of this.disposables) d.dispose();
  }
}
