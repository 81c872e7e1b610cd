// The rules for every question the agent puts to the person (docs/design.md,
// "Questions go to the person, never to the keyboard"): what a question is,
// when the person counts as typing, which keys answer it on its card, and
// what a notification offers when the chat is hidden. No vscode import:
// unit-tested under node.

/** One choice of a question, in the server's order. */
export interface QuestionOption {
  optionId: string;
  name: string;
  kind: string;
}

/** A question as the chat shows it. */
export interface Question {
  /** Unique in this window (q1, q2, …). */
  id: string;
  /** The tool call the question belongs to: its card carries it. Null for a question of no tool call. */
  toolCallId: string | null;
  /** What is asked, e.g. "Confirm shell command". */
  title: string;
  /** The command, URL, plan or message, in full. */
  subject: string;
  /** The tool kind, for a card made from the question when the call has none yet; 'message' for a message request of the server. */
  kind: string;
  options: QuestionOption[];
}

/**
 * How long after the last text change in an editor the person still counts
 * as typing. A notification (with the chat hidden) waits until this much
 * time has passed without a change.
 */
export const typingQuietMs = 1500;

/**
 * How many ms a question must still wait before a notification may show,
 * given the time of the last text change (undefined: none seen). 0: show now.
 */
export function typingWait(lastTyped: number | undefined, now: number, quietMs = typingQuietMs): number {
  if (lastTyped === undefined) return 0;
  const since = now - lastTyped;
  if (since < 0) return quietMs; // a clock step back: wait a full period
  return since >= quietMs ? 0 : quietMs - since;
}

/**
 * The option a key given to the question's card chooses: 1–9 pick the
 * option with that number. Any other key, or a key with a modifier, answers
 * nothing.
 */
export function optionForKey(key: string, options: QuestionOption[], mods: { ctrl?: boolean; alt?: boolean; meta?: boolean } = {}): QuestionOption | undefined {
  if (mods.ctrl || mods.alt || mods.meta) return undefined;
  if (!/^[1-9]$/.test(key)) return undefined;
  return options[Number(key) - 1];
}

/** The button that brings the person to the question in the chat. */
export const showInChat = 'Show in Chat';

/**
 * The buttons of the notification that asks when the chat is hidden. A
 * toast cuts long labels short, so it offers every option only when there
 * are at most three with short names (48 characters together), else two
 * by name: the first that allows once (else the first) and the first that
 * rejects (else the last); then "Show in Chat", where the card has them all.
 * Two options with the same name keep one button: a button is found again
 * by its label.
 */
export function notificationButtons(options: QuestionOption[]): string[] {
  const pick: QuestionOption[] = [];
  const short = options.length <= 3 && options.reduce((n, o) => n + o.name.length, 0) <= 48;
  if (options.length <= 2 || short) pick.push(...options);
  else {
    pick.push(options.find((o) => o.kind === 'allow_once') ?? options[0]);
    pick.push(options.find((o) => o.kind === 'reject_once' || o.kind === 'reject_always') ?? options[options.length - 1]);
  }
  const out: string[] = [];
  for (const o of pick) if (!out.includes(o.name) && o.name !== showInChat) out.push(o.name);
  out.push(showInChat);
  return out;
}

/** The notification's text: what is asked, its subject on one line (cut at 300 characters), and how many choices the card has. */
export function notificationText(q: Pick<Question, 'title' | 'subject'> & { options?: QuestionOption[] }): string {
  const one = q.subject.replace(/\s*\n\s*/g, ' ⏎ ').trim();
  const subject = one.length > 300 ? one.slice(0, 299) + '…' : one;
  const more = q.options && q.options.length > 2 ? ` (${q.options.length} choices in the chat)` : '';
  const head = q.title === '' ? 'Qwen asks' : `Qwen asks: ${q.title}`;
  return (subject === '' ? head : `${head}: ${subject}`) + more;
}

/** How the card says a question ended: the choice, or withdrawn (the turn stopped first). */
export function answeredText(option: QuestionOption | undefined): string {
  return option ? `You chose: ${option.name}` : 'No longer asked: the turn stopped before an answer.';
}
