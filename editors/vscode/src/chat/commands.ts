// Slash commands in the chat input: the list comes from the server
// (qwen/listCommands, refreshed by available_commands_update); this file
// reads that list defensively and decides what the completion list shows.
// The server alone decides what a command does.

export interface SlashCommand {
  /** The name without the leading slash ("stats", "git:commit"). */
  name: string;
  description: string;
  /** The argument hint ("[model id]", "arguments"), or null when it takes none. */
  hint: string | null;
  source: 'builtin' | 'user' | 'project';
}

/** At most this many commands are kept from one list (a hostile or broken server sends no more). */
export const maxCommands = 500;
const maxName = 100;
const maxText = 500;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A name as the contract has it: no slash, no whitespace, printable. */
function validName(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= maxName && /^[^\s/][^\s]*$/.test(v) && !/[\u0000-\u001f\u007f]/.test(v);
}

function clip(s: string): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > maxText ? one.slice(0, maxText - 1) + '…' : one;
}

/**
 * The commands of a qwen/listCommands answer or an available_commands_update
 * (an array of items). Items that do not fit the shape are skipped; the
 * result is sorted by name with each name once.
 */
export function parseCommands(v: unknown): SlashCommand[] {
  const items = Array.isArray(v) ? v : isObj(v) && Array.isArray(v.commands) ? v.commands : isObj(v) && Array.isArray(v.availableCommands) ? v.availableCommands : undefined;
  if (!items) return [];
  const byName = new Map<string, SlashCommand>();
  for (const it of items) {
    if (byName.size >= maxCommands) break;
    if (!isObj(it) || !validName(it.name) || byName.has(it.name)) continue;
    const description = typeof it.description === 'string' ? clip(it.description) : '';
    const hint = isObj(it.input) && typeof it.input.hint === 'string' && it.input.hint.trim() !== '' ? clip(it.input.hint) : null;
    const source = it.source === 'user' || it.source === 'project' ? it.source : 'builtin';
    byName.set(it.name, { name: it.name, description, hint, source });
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The command name being typed: the text before the caret is "/" and a
 * name so far (no whitespace), at the very start of the input. Anything
 * else (a slash later in the text, "//" to send a slash as text, an
 * argument already started) is not a command to complete: undefined.
 */
export function slashQuery(text: string, caret: number): string | undefined {
  const before = text.slice(0, caret);
  const m = /^\/([^\s/]*)$/.exec(before);
  if (!m) return undefined;
  // The caret inside a word ("/st|ats"): complete only at its end.
  if (caret < text.length && !/^\s/.test(text.slice(caret))) return undefined;
  return m[1];
}

/**
 * The commands to offer for what was typed: names that start with it
 * first, then names where it starts a later part ("commit" finds
 * "git:commit", "model" finds "set-model"), then the ones whose name holds
 * it anywhere; each group keeps the list's order. Case-insensitive.
 */
export function matchCommands(all: readonly SlashCommand[], query: string): SlashCommand[] {
  const q = query.toLowerCase();
  if (q === '') return [...all];
  const prefix: SlashCommand[] = [];
  const part: SlashCommand[] = [];
  const inside: SlashCommand[] = [];
  for (const c of all) {
    const n = c.name.toLowerCase();
    if (n.startsWith(q)) prefix.push(c);
    else if (n.split(/[:\-_.]/).some((p) => p.startsWith(q))) part.push(c);
    else if (n.includes(q)) inside.push(c);
  }
  return [...prefix, ...part, ...inside];
}

/** The input after choosing a command: "/name " and whatever followed the typed name. */
export function completeInput(text: string, caret: number, name: string): { text: string; caret: number } {
  const rest = text.slice(caret).replace(/^\S*/, '').replace(/^\s*/, '');
  const head = `/${name} `;
  return { text: head + rest, caret: head.length };
}
