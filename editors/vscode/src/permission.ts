// qwen/requestPermission (protocol.md §6.1) and the plan approval that
// comes the same way: asked in the chat, on the tool's card, through
// Questions (src/questions.ts), with the command, URL or plan in full and
// the server's options by name, in its order.
import * as vscode from 'vscode';

import type { QuestionOption } from './question';
import type { Questions } from './questions';

export type PermissionOption = QuestionOption;

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

/** Asks on the tool's card; a withdrawn question (the turn stopped) answers cancelled. */
export async function askPermission(p: PermissionParams, token: vscode.CancellationToken, questions: Questions): Promise<PermissionResult> {
  if (!validParams(p)) return { outcome: { outcome: 'cancelled' } };
  const tc = p.toolCall ?? ({} as PermissionParams['toolCall']);
  const chosen = await questions.ask(
    {
      toolCallId: typeof tc.toolCallId === 'string' && tc.toolCallId !== '' ? tc.toolCallId : null,
      title: typeof tc.title === 'string' && tc.title !== '' ? tc.title : 'Allow this?',
      subject: subjectOf(p),
      kind: typeof tc.kind === 'string' ? tc.kind : 'other',
      options: p.options.map((o) => ({ optionId: o.optionId, name: o.name, kind: typeof o.kind === 'string' ? o.kind : '' })),
    },
    token,
  );
  return chosen ? { outcome: { outcome: 'selected', optionId: chosen.optionId } } : { outcome: { outcome: 'cancelled' } };
}

/** window/showMessageRequest: a server question of no tool call (such as "Trust this folder"), asked the same way. */
export async function askMessage(
  p: { type?: number; message?: string; actions?: { title: string }[] | null },
  token: vscode.CancellationToken,
  questions: Questions,
): Promise<{ title: string } | null> {
  const actions = Array.isArray(p?.actions) ? p.actions.filter((a) => a && typeof a.title === 'string' && a.title !== '') : [];
  const message = typeof p?.message === 'string' ? p.message : '';
  if (actions.length === 0) {
    // Nothing to choose: a message, shown as the language client would.
    if (p?.type === 1) void vscode.window.showErrorMessage(message);
    else if (p?.type === 2) void vscode.window.showWarningMessage(message);
    else void vscode.window.showInformationMessage(message);
    return null;
  }
  const chosen = await questions.ask(
    {
      toolCallId: null,
      title: '',
      subject: message,
      kind: 'message',
      options: actions.map((a, i) => ({ optionId: String(i), name: a.title, kind: '' })),
    },
    token,
  );
  return chosen ? { title: chosen.name } : null;
}
