// The chat view's script (runs in the webview, bundled to dist/webview.js).
// It builds the DOM with textContent everywhere except the agent's
// markdown, which the extension renders with raw HTML disabled.
import { HostMessage, isHostMessage, PlanEntry, ToolCard, WebviewMessage } from '../chat/protocol';
import { completeInput, matchCommands, SlashCommand, slashQuery } from '../chat/commands';
import { outcomeLabel, rejectedHunkLines } from '../chat/outcome';
import { optionForKey, Question } from '../question';

declare function acquireVsCodeApi(): { postMessage(m: WebviewMessage): void };

const vscode = acquireVsCodeApi();
const send = (m: WebviewMessage) => vscode.postMessage(m);

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function byId<T extends HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`#${id} missing`);
  return e as T;
}

const log = byId<HTMLElement>('log');
const form = byId<HTMLFormElement>('form');
const prompt = byId<HTMLTextAreaElement>('prompt');
const stop = byId<HTMLButtonElement>('stop');
const send_ = byId<HTMLButtonElement>('send');
const statusEl = byId<HTMLElement>('status');
const modelEl = byId<HTMLButtonElement>('model');
const empty = byId<HTMLElement>('empty');
const emptyText = byId<HTMLElement>('empty-text');
const emptyActions = byId<HTMLElement>('empty-actions');
const reviewsEl = byId<HTMLElement>('reviews');
/** The plan of the running turn: a card in the log where the turn put it, not pinned above later turns. */
let planEl: HTMLElement | undefined;
let setupHint: string | null = null;

function scrollDown(): void {
  log.scrollTop = log.scrollHeight;
}

const held = byId<HTMLElement>('held');

form.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = prompt.value.trim();
  if (text === '') return;
  if (document.body.dataset.busy === 'true') {
    // Enter while the agent works keeps the draft: nothing is sent, and
    // nothing typed here ever answers a question on a card.
    held.hidden = false;
    return;
  }
  send({ type: 'prompt', text });
  prompt.value = '';
  closeSlash();
});

// ---- slash commands: "/" at the start of the input opens the list ----

const slash = byId<HTMLElement>('slash');
/** The server's commands (the last list it sent). */
let commands: SlashCommand[] = [];
/** Asked the extension for the list and no answer yet. */
let commandsAsked = false;
/** A list (maybe empty) has arrived. */
let commandsLoaded = false;
/** What the open list shows, and which row is active. */
let shown: SlashCommand[] = [];
let active = 0;
/** Esc closed the list for this text: it stays closed until the text changes. */
let dismissedFor: string | undefined;

function slashOpen(): boolean {
  return !slash.hidden;
}

function closeSlash(): void {
  slash.hidden = true;
  slash.replaceChildren();
  shown = [];
  prompt.setAttribute('aria-expanded', 'false');
  prompt.removeAttribute('aria-activedescendant');
}

function setActive(i: number): void {
  if (shown.length === 0) return;
  active = (i + shown.length) % shown.length;
  const rows = slash.querySelectorAll<HTMLElement>('.slash-item');
  rows.forEach((r, j) => r.setAttribute('aria-selected', String(j === active)));
  const row = rows[active];
  if (row) {
    prompt.setAttribute('aria-activedescendant', row.id);
    row.scrollIntoView({ block: 'nearest' });
  }
}

/** Opens, refreshes or closes the list for the text and caret as they are now. */
function updateSlash(): void {
  const q = slashQuery(prompt.value, prompt.selectionStart);
  if (q === undefined || prompt.selectionStart !== prompt.selectionEnd || dismissedFor === prompt.value) {
    if (dismissedFor !== prompt.value) dismissedFor = undefined;
    closeSlash();
    return;
  }
  if (commands.length === 0 && !commandsAsked) {
    commandsAsked = true;
    send({ type: 'listCommands' });
  }
  const keep = shown[active]?.name;
  shown = matchCommands(commands, q);
  slash.replaceChildren();
  if (shown.length === 0) {
    const none = el(
      'div',
      'slash-none',
      !commandsLoaded ? 'Loading commands…' : commands.length === 0 ? 'This qwen-ls offers no commands.' : `No command matches /${q}: Enter sends it to the model as text.`,
    );
    slash.appendChild(none);
  }
  shown.forEach((c, i) => {
    const row = el('div', 'slash-item');
    row.id = `slash-${i}`;
    row.setAttribute('role', 'option');
    row.dataset.name = c.name;
    row.append(el('span', 'slash-name', `/${c.name}`));
    if (c.hint) row.append(el('span', 'slash-hint', c.hint));
    row.append(el('span', 'slash-desc', c.description));
    if (c.source !== 'builtin') row.append(el('span', 'slash-source', c.source));
    row.title = [`/${c.name}${c.hint ? ' ' + c.hint : ''}`, c.description, c.source !== 'builtin' ? `(${c.source} command)` : ''].filter((t) => t).join('\n');
    // Keep the focus (and the caret) in the input while clicking.
    row.addEventListener('mousedown', (e) => e.preventDefault());
    row.addEventListener('mousemove', () => {
      if (active !== i) setActive(i);
    });
    row.addEventListener('click', () => chooseCommand(i));
    slash.appendChild(row);
  });
  slash.hidden = false;
  fitSlash();
  prompt.setAttribute('aria-expanded', 'true');
  const again = keep ? shown.findIndex((c) => c.name === keep) : -1;
  setActive(again >= 0 ? again : 0);
}

/**
 * The list may use the whole height above the input, over the
 * conversation, and shows whole rows only: every row when they fit, else
 * as many whole rows as fit, scrolling to the rest (never a row cut in two).
 */
function fitSlash(): void {
  const above = form.getBoundingClientRect().top + 2; // the list's bottom sits 2px into the form
  const first = slash.querySelector<HTMLElement>('.slash-item, .slash-none');
  const row = first ? first.getBoundingClientRect().height : 0;
  const border = slash.offsetHeight - slash.clientHeight;
  if (row <= 0) {
    slash.style.maxHeight = `${Math.max(0, above - 4)}px`;
    return;
  }
  const rows = Math.max(1, Math.floor((above - 4 - border) / row));
  slash.style.maxHeight = `${rows * row + border}px`;
}

window.addEventListener('resize', () => {
  if (slashOpen()) fitSlash();
});

function chooseCommand(i: number): void {
  const c = shown[i];
  if (!c) return;
  const next = completeInput(prompt.value, prompt.selectionStart, c.name);
  prompt.value = next.text;
  prompt.setSelectionRange(next.caret, next.caret);
  closeSlash();
  prompt.focus();
}

function setCommands(list: SlashCommand[]): void {
  commands = list;
  commandsAsked = false;
  commandsLoaded = true;
  if (slashOpen() || (document.activeElement === prompt && slashQuery(prompt.value, prompt.selectionStart) !== undefined)) updateSlash();
}

prompt.addEventListener('keydown', (e) => {
  if (!slashOpen() || e.isComposing) return;
  switch (e.key) {
    case 'ArrowDown':
    case 'ArrowUp':
      if (shown.length === 0) return;
      setActive(active + (e.key === 'ArrowDown' ? 1 : -1));
      break;
    case 'Tab':
      if (shown.length === 0 || e.shiftKey) return;
      chooseCommand(active);
      break;
    case 'Enter': {
      if (e.shiftKey || shown.length === 0) return;
      // The whole name typed already: Enter sends, as without the list.
      const q = slashQuery(prompt.value, prompt.selectionStart);
      if (q !== undefined && shown[active]?.name === q) {
        closeSlash();
        return;
      }
      chooseCommand(active);
      break;
    }
    case 'Escape':
      dismissedFor = prompt.value;
      closeSlash();
      break;
    default:
      return;
  }
  e.preventDefault();
  e.stopImmediatePropagation();
});

prompt.addEventListener('keyup', (e) => {
  // The caret moved without changing the text.
  if (['ArrowLeft', 'ArrowRight', 'Home', 'End'].includes(e.key)) updateSlash();
});
prompt.addEventListener('click', () => updateSlash());
prompt.addEventListener('blur', () => closeSlash());

prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    form.requestSubmit();
  }
});

prompt.addEventListener('input', (e) => {
  updateSlash();
  const ie = e as InputEvent;
  if (ie.data === '@') {
    const before = prompt.value.slice(0, prompt.selectionStart - 1);
    if (before === '' || /\s$/.test(before)) send({ type: 'pickMention' });
  }
});

byId<HTMLButtonElement>('mention').addEventListener('click', () => {
  const pos = prompt.selectionStart;
  const before = prompt.value.slice(0, pos);
  const sep = before === '' || /\s$/.test(before) ? '' : ' ';
  prompt.setRangeText(sep + '@', pos, prompt.selectionEnd, 'end');
  send({ type: 'pickMention' });
});

stop.addEventListener('click', () => send({ type: 'cancel' }));
modelEl.addEventListener('click', () => send({ type: 'pickModel' }));

function button(text: string, onClick: () => void, cls = ''): HTMLButtonElement {
  const b = el('button', cls, text);
  b.type = 'button';
  b.addEventListener('click', onClick);
  return b;
}

/** The settings query that shows exactly these settings (their common prefix). */
function settingsQuery(ids: string[]): string {
  if (ids.length === 1) return ids[0];
  return ids.every((id) => id.startsWith('qwen.model.')) ? 'qwen.model' : 'qwen';
}

/** Whether a setup message sends the person to Qwen: Set API Key (src/setup.ts words it so). */
function keyWanted(text: string): boolean {
  return text.includes('"Qwen: Set API Key"');
}

/** The empty chat says what to do next: set up the model, or ask. */
function renderEmpty(): void {
  const isEmpty = log.childElementCount === 0;
  empty.hidden = !isEmpty;
  if (!isEmpty) return;
  emptyActions.replaceChildren();
  if (setupHint !== null) {
    empty.dataset.kind = 'setup';
    emptyText.textContent = setupHint;
    const server = /qwen\.serverPath/.test(setupHint);
    emptyActions.append(button('Open Settings', () => send({ type: 'openSettings', query: server ? 'qwen.serverPath' : 'qwen.model' })));
    if (keyWanted(setupHint)) emptyActions.append(button('Set API Key', () => send({ type: 'setApiKey' })));
    if (!server) emptyActions.append(button('Check Setup', () => send({ type: 'checkSetup' })));
  } else {
    empty.dataset.kind = 'ready';
    emptyText.textContent =
      'Ask Qwen about this workspace, or ask it to change something: it shows each edit for review before your file changes. Type @ to mention a file, / for commands (/help lists them).';
  }
}

const agentEls = new Map<string, HTMLElement>();
const thoughtEls = new Map<string, HTMLElement>();
const toolEls = new Map<string, HTMLDetailsElement>();

/** A small line diff for display: the changed middle, with common lines trimmed. */
function diffLines(oldText: string | null, newText: string): { sign: string; line: string }[] {
  const a = oldText === null ? [] : oldText.split('\n');
  const b = newText.split('\n');
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const out: { sign: string; line: string }[] = [];
  for (let i = Math.max(0, pre - 2); i < pre; i++) out.push({ sign: ' ', line: a[i] });
  for (let i = pre; i < a.length - suf; i++) out.push({ sign: '-', line: a[i] });
  for (let i = pre; i < b.length - suf; i++) out.push({ sign: '+', line: b[i] });
  for (let i = a.length - suf; i < Math.min(a.length, a.length - suf + 2); i++) out.push({ sign: ' ', line: a[i] });
  return out;
}

const statusIcon: Record<string, string> = { pending: '○', in_progress: '◐', completed: '✓', failed: '✗' };
/** How a finished call looks: three different looks for failed, rejected and cancelled (its words: outcomeLabel). */
const outcomeIcon: Record<string, string> = { completed: '✓', failed: '✗', rejected: '✗', cancelled: '⊘' };

// ---- questions: asked on the tool's card, answered only by a click or a key given to the card ----

/** The question blocks, by question id, and which card (tool call id) holds each. */
const questionEls = new Map<string, HTMLElement>();
const questionOfCard = new Map<string, string>();

/** A card for a tool call the chat has not seen yet (the question came first). */
function ensureCard(id: string, title: string, kind: string): HTMLDetailsElement {
  let d = toolEls.get(id);
  if (!d) {
    d = el('details', 'tool');
    d.dataset.id = id;
    d.dataset.status = 'pending';
    d.dataset.kind = kind;
    d.append(cardSummary(title || kind, undefined, 'pending'));
    toolEls.set(id, d);
    log.appendChild(d);
  }
  return d;
}

function renderQuestion(q: Question): void {
  const box = el('div', 'question');
  box.dataset.questionId = q.id;
  box.dataset.kind = q.kind;
  box.dataset.state = 'open';
  // Focus only on request (a click on the card, Tab, Show in Chat): never by itself.
  box.tabIndex = -1;
  box.setAttribute('role', 'group');
  box.setAttribute('aria-label', q.title ? `Qwen asks: ${q.title}` : 'Qwen asks');
  box.append(el('div', 'question-title', q.title || 'qwen-ls asks'));
  if (q.subject !== '') box.append(el('pre', 'question-subject', q.subject));
  const choices = el('div', 'question-options');
  q.options.forEach((o, i) => {
    const b = el('button', 'question-option');
    b.type = 'button';
    b.dataset.optionId = o.optionId;
    b.dataset.kind = o.kind;
    b.append(el('span', 'question-key', String(i + 1)), el('span', 'question-name', o.name));
    b.title = `${o.name} (${i + 1} while this card has focus)`;
    b.addEventListener('click', () => choose(box, q, o.optionId));
    choices.append(b);
  });
  box.append(choices);
  box.append(el('div', 'question-hint', `Click a choice, or click this card and press 1–${q.options.length}. Typing in the chat never answers.`));
  box.addEventListener('mousedown', (e) => {
    // A click on the card's text gives it focus, so that its keys work.
    if (!(e.target instanceof HTMLElement) || !e.target.closest('button')) box.focus();
  });
  box.addEventListener('keydown', (e) => {
    if (e.isComposing || box.dataset.state !== 'open') return;
    const option = optionForKey(e.key, q.options, { ctrl: e.ctrlKey, alt: e.altKey, meta: e.metaKey });
    const buttons = Array.from(box.querySelectorAll<HTMLButtonElement>('button.question-option'));
    const at = buttons.indexOf(document.activeElement as HTMLButtonElement);
    if (option) {
      choose(box, q, option.optionId);
    } else if (e.key === 'ArrowRight' || e.key === 'ArrowDown') {
      buttons[(at + 1) % buttons.length]?.focus();
    } else if (e.key === 'ArrowLeft' || e.key === 'ArrowUp') {
      buttons[(at - 1 + buttons.length) % buttons.length]?.focus();
    } else if (e.key === 'Escape') {
      prompt.focus();
    } else {
      return;
    }
    e.preventDefault();
    e.stopPropagation();
  });
  questionEls.set(q.id, box);
  if (q.toolCallId !== null) {
    const d = ensureCard(q.toolCallId, q.title, q.kind);
    questionOfCard.set(q.toolCallId, q.id);
    d.append(box);
    d.open = true;
  } else {
    const card = el('section', 'tool question-alone');
    card.append(box);
    log.appendChild(card);
  }
}

function choose(box: HTMLElement, q: Question, optionId: string): void {
  if (box.dataset.state !== 'open') return;
  box.dataset.state = 'sent';
  box.querySelectorAll<HTMLButtonElement>('button.question-option').forEach((b) => (b.disabled = true));
  send({ type: 'answer', id: q.id, optionId });
}

function questionDone(id: string, text: string): void {
  const box = questionEls.get(id);
  if (!box) return;
  const hadFocus = box.contains(document.activeElement);
  box.dataset.state = 'done';
  box.removeAttribute('tabindex');
  box.querySelector('.question-options')?.remove();
  box.querySelector('.question-hint')?.remove();
  box.append(el('div', 'question-answer', text));
  // The keys go back where the person types.
  if (hadFocus) prompt.focus();
}

function focusQuestion(id: string): void {
  const box = questionEls.get(id);
  if (!box || box.dataset.state !== 'open') return;
  const d = box.closest('details');
  if (d) d.open = true;
  box.scrollIntoView({ block: 'nearest' });
  // The card, not its first choice: a stray Enter must not answer.
  box.focus();
}

function cardSummary(title: string, look: { icon: string; label: string } | undefined, status: string): HTMLElement {
  const summary = el('summary');
  summary.append(
    el('span', 'tool-icon', look?.icon ?? statusIcon[status] ?? '•'),
    el('span', 'tool-title', title),
    el('span', 'tool-status', look?.label ?? status.replace('_', ' ')),
  );
  return summary;
}

function renderTool(card: ToolCard): void {
  let d = toolEls.get(card.id);
  if (!d) {
    d = el('details', 'tool');
    d.dataset.id = card.id;
    toolEls.set(card.id, d);
    log.appendChild(d);
  }
  d.dataset.status = card.status;
  d.dataset.kind = card.kind;
  if (card.outcome) d.dataset.outcome = card.outcome;
  else delete d.dataset.outcome;
  if (card.undone) d.dataset.undone = 'true';
  else delete d.dataset.undone;
  if (card.review) d.dataset.review = card.review.kept < card.review.total ? 'partial' : 'whole';
  else delete d.dataset.review;
  d.replaceChildren();
  const icon = card.undone ? '↶' : card.outcome ? outcomeIcon[card.outcome] : undefined;
  d.appendChild(cardSummary(card.title || card.kind, { icon: icon ?? statusIcon[card.status] ?? '•', label: outcomeLabel(card) }, card.status));
  const rejected = rejectedHunkLines(card.review);
  if (rejected.length > 0) {
    const list = el('ul', 'tool-review');
    for (const line of rejected) list.appendChild(el('li', undefined, line));
    d.appendChild(list);
  }
  // The card's question stays on it (asked, or answered) whatever the update.
  const qid = questionOfCard.get(card.id);
  const question = qid ? questionEls.get(qid) : undefined;
  if (card.output !== undefined) d.appendChild(el('pre', 'tool-output', card.output));
  for (const diff of card.diffs ?? []) {
    const box = el('div', 'diff');
    box.appendChild(el('div', 'diff-path', diff.path + (diff.oldText === null ? ' (new file)' : '')));
    const pre = el('pre', 'diff-body');
    for (const l of diffLines(diff.oldText, diff.newText)) {
      pre.appendChild(el('span', l.sign === '+' ? 'add' : l.sign === '-' ? 'del' : 'ctx', `${l.sign} ${l.line}\n`));
    }
    box.appendChild(pre);
    d.appendChild(box);
  }
  if (question) {
    d.appendChild(question);
    if (question.dataset.state === 'open') d.open = true;
  }
}

function renderPlan(entries: PlanEntry[]): void {
  if (entries.length === 0) return;
  if (!planEl) {
    planEl = el('section', 'plan');
    planEl.appendChild(el('h4', undefined, 'Plan'));
    planEl.appendChild(el('ol'));
    log.appendChild(planEl);
  }
  const list = planEl.querySelector('ol')!;
  list.replaceChildren();
  for (const e of entries) {
    const li = el('li', `plan-${e.status}`);
    li.append(el('span', 'plan-icon', statusIcon[e.status] ?? '•'), el('span', 'plan-text', e.content));
    list.appendChild(li);
  }
  planEl.dataset.done = String(entries.every((e) => e.status === 'completed'));
}

function renderReviews(reviews: { uri: string; name: string; hunks: number; isNewFile: boolean }[]): void {
  reviewsEl.replaceChildren();
  for (const r of reviews) {
    const label = r.isNewFile ? `Review new file ${r.name}` : `Review (${r.hunks} ${r.hunks === 1 ? 'hunk' : 'hunks'}) ${r.name}`;
    const b = button(label, () => send({ type: 'openReview', uri: r.uri }), 'review-action');
    b.dataset.uri = r.uri;
    reviewsEl.appendChild(b);
  }
  reviewsEl.hidden = reviews.length === 0;
}

function handle(m: HostMessage): void {
  switch (m.type) {
    case 'state':
      stop.disabled = !m.busy;
      send_.disabled = m.busy;
      statusEl.textContent = m.status;
      modelEl.hidden = m.sessionId === null && m.model === null && m.setupHint === null;
      modelEl.textContent = m.model ?? (m.unusableModel ? `${m.unusableModel} ⚠` : 'no model');
      modelEl.dataset.model = m.model ?? '';
      modelEl.title = [
        m.model ? `Model: ${m.model}` : m.unusableModel ? `Model: ${m.unusableModel}, not usable yet: ${m.status}` : 'No model is configured',
        m.tokens,
        'Click to choose the model.',
      ]
        .filter((s) => s)
        .join('\n');
      modelEl.dataset.tokens = m.tokens ?? '';
      document.body.dataset.busy = String(m.busy);
      document.body.dataset.session = m.sessionId ?? '';
      if (!m.busy) held.hidden = true;
      document.body.dataset.status = m.status;
      // A setup problem's few words (src/setup.ts setupText), or no server.
      document.body.dataset.problem = String(/^(no |not running$|error$|API key refused$|model unreachable$|model not found$)/.test(m.status));
      setupHint = m.setupHint;
      renderEmpty();
      return;
    case 'reviews':
      renderReviews(m.reviews);
      return;
    case 'user':
      planEl = undefined;
      log.appendChild(el('div', 'msg user', m.text));
      break;
    case 'agent': {
      let e = agentEls.get(m.id);
      if (!e) {
        e = el('div', 'msg agent');
        agentEls.set(m.id, e);
        log.appendChild(e);
      }
      e.innerHTML = m.html; // rendered by markdown-it with html disabled
      break;
    }
    case 'thought': {
      let e = thoughtEls.get(m.id);
      if (!e) {
        e = el('div', 'msg thought');
        thoughtEls.set(m.id, e);
        log.appendChild(e);
      }
      e.textContent = m.text;
      break;
    }
    case 'tool':
      renderTool(m.card);
      break;
    case 'plan':
      renderPlan(m.entries);
      break;
    case 'turnEnd':
      if (m.usage) log.appendChild(el('div', 'turn-usage', m.usage));
      log.appendChild(el('div', `turn-end stop-${m.stopReason}`, m.stopReason === 'end_turn' ? '' : `Stopped: ${m.stopReason}`));
      break;
    case 'error': {
      const box = el('div', 'msg error');
      box.appendChild(el('div', 'error-text', m.message));
      const ids = m.settings ?? [];
      if (ids.length > 0 || (m.settings && keyWanted(m.message))) {
        const actions = el('div', 'error-actions');
        if (ids.length > 0) actions.append(button('Open Settings', () => send({ type: 'openSettings', query: settingsQuery(ids) })));
        if (keyWanted(m.message)) actions.append(button('Set API Key', () => send({ type: 'setApiKey' })));
        actions.append(button('Check Setup', () => send({ type: 'checkSetup' })));
        box.appendChild(actions);
      }
      log.appendChild(box);
      break;
    }
    case 'notice':
      log.appendChild(el('div', 'msg notice', m.text));
      break;
    case 'clear':
      log.replaceChildren();
      agentEls.clear();
      thoughtEls.clear();
      toolEls.clear();
      questionEls.clear();
      questionOfCard.clear();
      planEl = undefined;
      renderEmpty();
      return;
    case 'commands':
      setCommands(m.commands);
      return;
    case 'question':
      renderQuestion(m.question);
      break;
    case 'questionDone':
      questionDone(m.id, m.text);
      return;
    case 'focusQuestion':
      focusQuestion(m.id);
      return;
    case 'insertMention': {
      const pos = prompt.selectionStart;
      prompt.setRangeText(m.path + ' ', pos, prompt.selectionEnd, 'end');
      prompt.focus();
      return;
    }
  }
  renderEmpty();
  scrollDown();
}

window.addEventListener('message', (e: MessageEvent) => {
  if (!isHostMessage(e.data)) return;
  handle(e.data);
});

renderEmpty();
send({ type: 'ready' });
document.body.dataset.ready = 'true';
prompt.focus();
