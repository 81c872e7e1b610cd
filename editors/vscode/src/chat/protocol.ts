// Messages between the chat webview and the extension. The webview is
// untrusted input (it renders model output), so every message it posts is
// checked here before the extension acts on it: an unknown type, a missing
// or mistyped field, an extra field or an oversized value drops the message.
// The webview checks what it receives with the same rules (isHostMessage).
import { maxCommands, SlashCommand } from './commands';
import { parseReview, ReviewSummary } from './outcome';
import type { Question } from '../question';

/**
 * The approval modes the webview may ask for. The server advertises its
 * own list (initialize's experimental.qwen.approvalModes, read by
 * serverApprovalModes); this one checks the untrusted webview's messages
 * and stands in for a server too old to advertise.
 */
export const approvalModes = ['default', 'plan', 'auto-edit', 'yolo'] as const;
export type ApprovalMode = (typeof approvalModes)[number];

/**
 * The approval modes the server offers, from its initialize result's
 * experimental capabilities; the built-in list when it names none.
 */
export function serverApprovalModes(experimental: unknown): string[] {
  const obj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const qwen = obj(experimental) ? experimental.qwen : undefined;
  const modes = obj(qwen) ? qwen.approvalModes : undefined;
  if (Array.isArray(modes) && modes.length > 0 && modes.every((m) => typeof m === 'string' && m !== '')) return modes;
  return [...approvalModes];
}

/** Longest prompt accepted from the webview, in UTF-16 code units. */
export const maxPromptLength = 1 << 20;

export type WebviewMessage =
  | { type: 'ready' }
  | { type: 'prompt'; text: string }
  | { type: 'cancel' }
  | { type: 'newSession' }
  | { type: 'listSessions' }
  | { type: 'setMode'; mode: ApprovalMode }
  | { type: 'pickMention' }
  | { type: 'openLocation'; path: string; line?: number }
  | { type: 'openReview'; uri: string }
  | { type: 'openSettings'; query: string }
  | { type: 'checkSetup' }
  /** Qwen: Set API Key, offered where a message says the key is missing or refused. */
  | { type: 'setApiKey' }
  | { type: 'pickModel' }
  /** The webview wants the slash commands (it has none yet, and "/" was typed). */
  | { type: 'listCommands' }
  /** The person chose an option of a question on its card (a click, or a key given to the card). */
  | { type: 'answer'; id: string; optionId: string };

export interface ToolCard {
  id: string;
  title: string;
  kind: string;
  status: string;
  /** How a finished call ended (_meta.qwen.outcome, else its status). */
  outcome?: 'completed' | 'failed' | 'rejected' | 'cancelled';
  /** A review decided hunk by hunk (_meta.qwen.review): "2 of 3 changes kept". */
  review?: ReviewSummary;
  /** The call's turn was undone (_meta.qwen.undone). */
  undone?: boolean;
  output?: string;
  diffs?: { path: string; oldText: string | null; newText: string }[];
}

export interface PlanEntry {
  content: string;
  status: string;
  priority: string;
}

export type HostMessage =
  | {
      type: 'state';
      busy: boolean;
      mode: string;
      sessionId: string | null;
      model: string | null;
      /** With no usable model: the model the settings name, which lacks its key or endpoint; else null. */
      unusableModel: string | null;
      status: string;
      setupHint: string | null;
      /** The session's token totals (formatSessionUsage), null before its first counted turn. */
      tokens: string | null;
    }
  | { type: 'user'; text: string }
  | { type: 'agent'; id: string; html: string }
  | { type: 'thought'; id: string; text: string }
  | { type: 'tool'; card: ToolCard }
  | { type: 'plan'; entries: PlanEntry[] }
  | { type: 'turnEnd'; stopReason: string; usage?: string }
  | { type: 'error'; message: string; settings?: string[] }
  | { type: 'reviews'; reviews: { uri: string; name: string; hunks: number; isNewFile: boolean }[] }
  | { type: 'notice'; text: string }
  | { type: 'clear' }
  | { type: 'insertMention'; path: string }
  /** The slash commands the server offers now (the whole list, replacing the last). */
  | { type: 'commands'; commands: SlashCommand[] }
  /** A question for the person, shown on its tool's card (or on its own without a tool call). */
  | { type: 'question'; question: Question }
  /** The question was answered or withdrawn: the card says how, and its buttons go. */
  | { type: 'questionDone'; id: string; text: string }
  /** The person asked to go to the question (Show in Chat, the status bar): focus its first choice. */
  | { type: 'focusQuestion'; id: string };

type FieldCheck = (v: unknown) => boolean;

const nonEmptyStr = (max: number): FieldCheck => (v) => typeof v === 'string' && v.length > 0 && v.length <= max;
const oneOf = (values: readonly string[]): FieldCheck => (v) => typeof v === 'string' && values.includes(v);
const posInt: FieldCheck = (v) => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 1e9;

interface Shape {
  required: Record<string, FieldCheck>;
  optional?: Record<string, FieldCheck>;
}

const webviewShapes: Record<WebviewMessage['type'], Shape> = {
  ready: { required: {} },
  prompt: { required: { text: nonEmptyStr(maxPromptLength) } },
  cancel: { required: {} },
  newSession: { required: {} },
  listSessions: { required: {} },
  setMode: { required: { mode: oneOf(approvalModes) } },
  pickMention: { required: {} },
  openLocation: { required: { path: nonEmptyStr(4096) }, optional: { line: posInt } },
  openReview: { required: { uri: nonEmptyStr(8192) } },
  // Only the extension's own settings can be opened from the chat.
  openSettings: { required: { query: (v) => typeof v === 'string' && /^qwen(\.[A-Za-z]+)*$/.test(v) } },
  checkSetup: { required: {} },
  setApiKey: { required: {} },
  pickModel: { required: {} },
  listCommands: { required: {} },
  answer: { required: { id: nonEmptyStr(64), optionId: nonEmptyStr(256) } },
};

function matches(msg: Record<string, unknown>, shape: Shape): boolean {
  for (const [k, check] of Object.entries(shape.required)) {
    if (!(k in msg) || !check(msg[k])) return false;
  }
  for (const k of Object.keys(msg)) {
    if (k === 'type' || k in shape.required) continue;
    const check = shape.optional?.[k];
    if (!check || !check(msg[k])) return false;
  }
  return true;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}

/** The message the webview posted, or undefined when it is not a valid one. */
export function parseWebviewMessage(v: unknown): WebviewMessage | undefined {
  if (!isPlainObject(v) || typeof v.type !== 'string') return undefined;
  if (!Object.prototype.hasOwnProperty.call(webviewShapes, v.type)) return undefined;
  const shape = webviewShapes[v.type as WebviewMessage['type']];
  return matches(v, shape) ? (v as unknown as WebviewMessage) : undefined;
}

/**
 * @-mentions in a prompt: `@path` tokens (a path has no spaces), at the
 * start or after whitespace. The extension resolves each against the
 * workspace and sends the buffer's text as a resource block.
 */
export function findMentions(text: string): string[] {
  const out: string[] = [];
  const re = /(^|\s)@([^\s@]+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    const p = m[2].replace(/[.,;:!?)\]]+$/, '');
    if (p !== '' && !out.includes(p)) out.push(p);
  }
  return out;
}

const isStr = (v: unknown): v is string => typeof v === 'string';

function isToolCard(v: unknown): v is ToolCard {
  if (!isPlainObject(v)) return false;
  if (!isStr(v.id) || !isStr(v.title) || !isStr(v.kind) || !isStr(v.status)) return false;
  if (v.output !== undefined && !isStr(v.output)) return false;
  if (v.outcome !== undefined && !['completed', 'failed', 'rejected', 'cancelled'].includes(v.outcome as string)) return false;
  if (v.review !== undefined && parseReview(v.review) === undefined) return false;
  if (v.undone !== undefined && typeof v.undone !== 'boolean') return false;
  if (v.diffs !== undefined) {
    if (!Array.isArray(v.diffs)) return false;
    for (const d of v.diffs) {
      if (!isPlainObject(d) || !isStr(d.path) || !isStr(d.newText) || !(d.oldText === null || isStr(d.oldText))) return false;
    }
  }
  return true;
}

function isQuestion(v: unknown): v is Question {
  return (
    isPlainObject(v) &&
    isStr(v.id) &&
    (v.toolCallId === null || isStr(v.toolCallId)) &&
    isStr(v.title) &&
    isStr(v.subject) &&
    isStr(v.kind) &&
    Array.isArray(v.options) &&
    v.options.length > 0 &&
    v.options.every((o) => isPlainObject(o) && isStr(o.optionId) && isStr(o.name) && isStr(o.kind))
  );
}

function isSlashCommand(v: unknown): v is SlashCommand {
  return (
    isPlainObject(v) &&
    isStr(v.name) &&
    v.name !== '' &&
    isStr(v.description) &&
    (v.hint === null || isStr(v.hint)) &&
    (v.source === 'builtin' || v.source === 'user' || v.source === 'project')
  );
}

/** Checks a message the webview receives from the extension. */
export function isHostMessage(v: unknown): v is HostMessage {
  if (!isPlainObject(v) || !isStr(v.type)) return false;
  switch (v.type) {
    case 'state':
      return (
        typeof v.busy === 'boolean' &&
        isStr(v.mode) &&
        (v.sessionId === null || isStr(v.sessionId)) &&
        (v.model === null || isStr(v.model)) &&
        (v.unusableModel === null || isStr(v.unusableModel)) &&
        isStr(v.status) &&
        (v.setupHint === null || isStr(v.setupHint)) &&
        (v.tokens === null || isStr(v.tokens))
      );
    case 'user':
    case 'notice':
      return isStr(v.text);
    case 'agent':
      return isStr(v.id) && isStr(v.html);
    case 'thought':
      return isStr(v.id) && isStr(v.text);
    case 'tool':
      return isToolCard(v.card);
    case 'plan':
      return Array.isArray(v.entries) && v.entries.every((e) => isPlainObject(e) && isStr(e.content) && isStr(e.status) && isStr(e.priority));
    case 'turnEnd':
      return isStr(v.stopReason) && (v.usage === undefined || isStr(v.usage));
    case 'error':
      return isStr(v.message) && (v.settings === undefined || (Array.isArray(v.settings) && v.settings.every(isStr)));
    case 'reviews':
      return (
        Array.isArray(v.reviews) &&
        v.reviews.every((r) => isPlainObject(r) && isStr(r.uri) && isStr(r.name) && typeof r.hunks === 'number' && typeof r.isNewFile === 'boolean')
      );
    case 'clear':
      return true;
    case 'insertMention':
      return isStr(v.path);
    case 'commands':
      return Array.isArray(v.commands) && v.commands.length <= maxCommands && v.commands.every(isSlashCommand);
    case 'question':
      return isQuestion(v.question);
    case 'questionDone':
      return isStr(v.id) && isStr(v.text);
    case 'focusQuestion':
      return isStr(v.id);
    default:
      return false;
  }
}
