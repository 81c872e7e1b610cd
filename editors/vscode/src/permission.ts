// qwen/requestPermission (protocol.md §6.1): the server's options in a
// QuickPick (or a modal dialog, per qwen.permissionPrompt), with the command
// or URL shown in full.
import * as vscode from 'vscode';

import { optionItems, PermissionOption } from './permissionLabels';

export type { PermissionOption };

export interface PermissionParams {
  sessionId: string;
  toolCall: {
    toolCallId: string;
    title: string;
    kind?: string;
    rawInput?: unknown;
    content?: { type: string; content?: { type: string; text?: string } }[];
  };
  options: PermissionOption[];
}

export type PermissionResult = { outcome: { outcome: 'selected'; optionId: string } | { outcome: 'cancelled' } };

/** The command, URL or other subject of the request, in full. */
export function subjectOf(p: PermissionParams): string {
  const raw = p.toolCall?.rawInput;
  if (raw && typeof raw === 'object') {
    const r = raw as Record<string, unknown>;
    for (const k of ['command', 'url', 'prompt', 'query', 'file_path', 'absolute_path']) {
      if (typeof r[k] === 'string' && r[k] !== '') return r[k] as string;
    }
  }
  const texts = (p.toolCall?.content ?? []).map((c) => c.content?.text).filter((t): t is string => typeof t === 'string');
  if (texts.length > 0) return texts.join('\n');
  return raw === undefined ? '' : JSON.stringify(raw, null, 2);
}

function validParams(p: PermissionParams): boolean {
  return (
    !!p &&
    typeof p === 'object' &&
    Array.isArray(p.options) &&
    p.options.length > 0 &&
    p.options.every((o) => o && typeof o.optionId === 'string' && typeof o.name === 'string')
  );
}

export async function askPermission(p: PermissionParams, token: vscode.CancellationToken): Promise<PermissionResult> {
  if (!validParams(p)) return { outcome: { outcome: 'cancelled' } };
  const mode = vscode.workspace.getConfiguration('qwen').get<string>('permissionPrompt', 'quickPick');
  if (mode === 'modal') return askModal(p, token);
  return askQuickPick(p, token);
}

async function askModal(p: PermissionParams, token: vscode.CancellationToken): Promise<PermissionResult> {
  const subject = subjectOf(p);
  const names = p.options.map((o) => o.name);
  const choice = await Promise.race([
    vscode.window.showWarningMessage(`Qwen: ${p.toolCall.title}`, { modal: true, detail: subject }, ...names),
    new Promise<undefined>((resolve) => token.onCancellationRequested(() => resolve(undefined))),
  ]);
  const opt = p.options.find((o) => o.name === choice);
  return opt ? { outcome: { outcome: 'selected', optionId: opt.optionId } } : { outcome: { outcome: 'cancelled' } };
}

type Item = vscode.QuickPickItem & { optionId?: string; showFull?: boolean };

function askQuickPick(p: PermissionParams, token: vscode.CancellationToken): Promise<PermissionResult> {
  const subject = subjectOf(p);
  const oneLine = subject.replace(/\s*\n\s*/g, ' ⏎ ');
  return new Promise<PermissionResult>((resolve) => {
    const qp = vscode.window.createQuickPick<Item>();
    qp.title = `Qwen asks: ${p.toolCall.title}`;
    qp.placeholder = oneLine === '' ? 'Choose an answer' : oneLine;
    qp.ignoreFocusOut = true;
    qp.matchOnDetail = true;
    const items: Item[] = optionItems(p.options);
    if (subject !== '') {
      items.push({ label: '', kind: vscode.QuickPickItemKind.Separator });
      // The placeholder is cut to the widget's width: the whole text is here.
      items.push({ label: '$(eye) Show the full request…', detail: subject.length > 400 ? subject.slice(0, 400) + '…' : subject, showFull: true });
    }
    qp.items = items;
    let done = false;
    const finish = (r: PermissionResult) => {
      if (done) return;
      done = true;
      resolve(r);
      qp.dispose();
      sub.dispose();
    };
    const sub = token.onCancellationRequested(() => finish({ outcome: { outcome: 'cancelled' } }));
    qp.onDidAccept(async () => {
      const sel = qp.selectedItems[0];
      if (!sel) return;
      if (sel.showFull) {
        qp.hide();
        finish(await askModal(p, token));
        return;
      }
      if (sel.optionId) finish({ outcome: { outcome: 'selected', optionId: sel.optionId } });
    });
    qp.onDidHide(() => {
      // Hidden by the "show full" path: that path answers.
      if (qp.selectedItems[0]?.showFull) return;
      finish({ outcome: { outcome: 'cancelled' } });
    });
    qp.show();
  });
}
