// The model picker and the token counts, without VS Code: reading the
// answers of qwen/listModels and qwen/prompt's usage (protocol.md
// "Choosing the model"), and the words the chat and the status bar show.

export interface ModelInfo {
  id: string;
  name: string;
  provider: string;
  baseUrl: string;
  description?: string;
}

export interface ModelList {
  models: ModelInfo[];
  /** The session's model (or the default); null when none is configured. */
  current: string | null;
}

/** Token counts of one turn (qwen/prompt's usage) or a sum of turns. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cachedTokens: number;
}

export const noUsage: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0, cachedTokens: 0 };

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const isStr = (v: unknown): v is string => typeof v === 'string';
const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

/** qwen/listModels' result, or undefined when it is not one. Entries without an id are dropped. */
export function parseModelList(raw: unknown): ModelList | undefined {
  if (!isObj(raw) || !Array.isArray(raw.models)) return undefined;
  const models: ModelInfo[] = [];
  for (const m of raw.models) {
    if (!isObj(m) || !isStr(m.id) || m.id === '') continue;
    const info: ModelInfo = {
      id: m.id,
      name: isStr(m.name) && m.name !== '' ? m.name : m.id,
      provider: isStr(m.provider) ? m.provider : '',
      baseUrl: isStr(m.baseUrl) ? m.baseUrl : '',
    };
    if (isStr(m.description) && m.description !== '') info.description = m.description;
    models.push(info);
  }
  return { models, current: isStr(raw.current) && raw.current !== '' ? raw.current : null };
}

export interface ModelItem {
  label: string;
  description: string;
  detail?: string;
  id: string;
  current: boolean;
}

/**
 * The QuickPick rows: the name, the provider, the endpoint and the
 * description; the current model is ticked and said to be current.
 */
export function modelItems(list: ModelList): ModelItem[] {
  return list.models.map((m) => {
    const current = m.id === list.current;
    const detail = [m.baseUrl, m.description].filter((s): s is string => !!s).join(' — ');
    const item: ModelItem = {
      label: `${current ? '$(check)' : '$(blank)'} ${m.name}`,
      description: [m.provider, m.name !== m.id ? m.id : '', current ? 'current' : ''].filter((s) => s !== '').join(' · '),
      id: m.id,
      current,
    };
    if (detail !== '') item.detail = detail;
    return item;
  });
}

/** The usage of a qwen/prompt result, or undefined when it has none. */
export function parseUsage(raw: unknown): Usage | undefined {
  if (!isObj(raw)) return undefined;
  const u: Usage = {
    inputTokens: count(raw.inputTokens),
    outputTokens: count(raw.outputTokens),
    totalTokens: count(raw.totalTokens),
    cachedTokens: count(raw.cachedTokens),
  };
  if (u.totalTokens === 0) u.totalTokens = u.inputTokens + u.outputTokens;
  return u.totalTokens === 0 && u.cachedTokens === 0 ? undefined : u;
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
    cachedTokens: a.cachedTokens + b.cachedTokens,
  };
}

/** 1700 → "1,700", whatever the display language (the line must read the same in every test). */
export function tokens(n: number): string {
  return String(Math.floor(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** "1,700 in · 40 out" plus " · 300 cached" when the cache served part of the prompt. */
function counts(u: Usage): string {
  const parts = [`${tokens(u.inputTokens)} in`, `${tokens(u.outputTokens)} out`];
  if (u.cachedTokens > 0) parts.push(`${tokens(u.cachedTokens)} cached`);
  return parts.join(' · ');
}

/** The line under a turn: "Tokens: 1,700 in · 40 out". */
export function formatTurnUsage(u: Usage): string {
  return `Tokens: ${counts(u)}`;
}

/** The session's running totals: "Session: 2 turns · 3,400 in · 80 out tokens". */
export function formatSessionUsage(total: Usage, turns: number): string {
  return `Session: ${turns} ${turns === 1 ? 'turn' : 'turns'} · ${counts(total)} tokens`;
}

/** usage_update's {used, size}: "Context: 920 of 131,072 tokens (1%)", or undefined without a size. */
export function formatContext(used: number, size: number): string | undefined {
  if (!(size > 0) || !(used >= 0)) return undefined;
  const pct = Math.min(100, Math.round((used / size) * 100));
  return `Context: ${tokens(used)} of ${tokens(size)} tokens (${pct}%)`;
}

/**
 * What the chat says after qwen.model.name changed: which model the chat
 * uses from its next request, or why it keeps the one it has.
 *   name:    the setting's new value ('' when cleared)
 *   def:     the default model the settings now give (null: none usable)
 *   session: whether the chat has a session (else the next one is meant)
 *   before:  the session's model before the change
 *   after:   the session's model now (after qwen/setModel)
 *   error:   why qwen/setModel refused, if it did
 *   problem: what is missing when def is null ("no API key")
 */
export function modelNameNotice(o: {
  name: string;
  def: string | null;
  session: boolean;
  before: string | null;
  after: string | null;
  error?: string;
  problem?: string;
}): string {
  const what = o.name === '' ? 'Qwen: qwen.model.name was cleared' : `Qwen: qwen.model.name is now ${o.name}`;
  if (o.def === null) {
    const why = o.problem ? ` (${o.problem})` : '';
    const keep = o.session && o.before ? `: this chat keeps ${o.before}.` : '.';
    return `${what}, but no model can be used with the settings as they are${why}${keep} Check Setup says what is missing.`;
  }
  if (o.error !== undefined) return `${what}, but this chat keeps ${o.before ?? 'its model'}: ${o.error}`;
  if (!o.session) return `${what}: the next chat session uses ${o.def}.`;
  if (o.before !== null && o.after !== null && o.before !== o.after) return `${what}: this chat switches from ${o.before} to ${o.after} from its next request.`;
  return `${what}: this chat uses ${o.after ?? o.def} from its next request.`;
}
