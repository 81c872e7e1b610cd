// The chat view's script (runs in the webview, bundled to dist/webview.js).
// It builds the DOM with textContent everywhere except the agent's
// markdown, which the extension renders with raw HTML disabled.
import { HostMessage, isHostMessage, PlanEntry, ToolCard, WebviewMessage } from '../chat/protocol';
import { completeInput, matchCommands, SlashCommand, slashQuery } from '../chat/commands';
import { outcomeLabel, rejectedHunkLines } from '../chat/outcome';

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

form.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = prompt.value.trim();
  if (text === '') return;
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
  prompt.setAttribute('aria-expanded', 'true');
  const again = keep ? shown.findIndex((c) => c.name === keep) : -1;
  setActive(again >= 0 ? again : 0);
}

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
    emptyActions.append(
      button('Open Settings', () => send({ type: 'openSettings', query: server ? 'qwen.serverPath' : 'qwen.model' })),
      button('Check Setup', () => send({ type: 'checkSetup' })),
    );
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
  const summary = el('summary');
  const icon = card.undone ? '↶' : card.outcome ? outcomeIcon[card.outcome] : undefined;
  summary.append(
    el('span', 'tool-icon', icon ?? statusIcon[card.status] ?? '•'),
    el('span', 'tool-title', card.title || card.kind),
    el('span', 'tool-status', outcomeLabel(card)),
  );
  d.appendChild(summary);
  const rejected = rejectedHunkLines(card.review);
  if (rejected.length > 0) {
    const list = el('ul', 'tool-review');
    for (const line of rejected) list.appendChild(el('li', undefined, line));
    d.appendChild(list);
  }
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
      modelEl.textContent = m.model ?? 'no model';
      modelEl.dataset.model = m.model ?? '';
      modelEl.title = [m.model ? `Model: ${m.model}` : 'No model is configured', m.tokens, 'Click to choose the model.'].filter((s) => s).join('\n');
      modelEl.dataset.tokens = m.tokens ?? '';
      document.body.dataset.busy = String(m.busy);
      document.body.dataset.status = m.status;
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
      if (m.settings && m.settings.length > 0) {
        const ids = m.settings;
        const actions = el('div', 'error-actions');
        actions.append(
          button('Open Settings', () => send({ type: 'openSettings', query: settingsQuery(ids) })),
          button('Check Setup', () => send({ type: 'checkSetup' })),
        );
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
      planEl = undefined;
      renderEmpty();
      return;
    case 'commands':
      setCommands(m.commands);
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
