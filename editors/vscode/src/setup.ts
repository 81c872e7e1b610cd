// What a failure of the model setup tells the person, and where they fix it
// (contract: error.data {reason, settings, env} of qwen/prompt and the
// result of qwen/checkSetup). No vscode import: unit-tested under node.

/** error.data of a setup failure, or the failing part of a checkSetup result. */
export interface SetupProblem {
  reason: string;
  settings: string[];
  env: string[];
  baseUrl?: string;
  model?: string;
}

/** The result of qwen/checkSetup. */
export interface CheckSetupResult {
  ok: boolean;
  message: string;
  model: string | null;
  baseUrl: string | null;
  reason?: string;
  settings?: string[];
  env?: string[];
  latencyMs?: number;
  sandbox?: string;
  /** The language servers qwen-ls knows, when the request named a file. */
  languageServers?: LanguageServerInfo[];
  /** Whether qwen-ls may start language servers (false in an untrusted folder). */
  lspAllowed?: boolean;
}

/** One entry of checkSetup's languageServers. */
export interface LanguageServerInfo {
  name: string;
  command: string;
  languages: string[];
  installed: boolean;
  forFile: boolean;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : []);

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The setup problem an error answer carries in its data, if it carries one. */
export function setupProblem(data: unknown): SetupProblem | undefined {
  if (!isObj(data) || typeof data.reason !== 'string' || data.reason === '') return undefined;
  const p: SetupProblem = { reason: data.reason, settings: strings(data.settings), env: strings(data.env) };
  if (typeof data.baseUrl === 'string') p.baseUrl = data.baseUrl;
  if (typeof data.model === 'string') p.model = data.model;
  return p;
}

/** A checkSetup result checked field by field; undefined when it is not one. */
export function parseCheckSetup(v: unknown): CheckSetupResult | undefined {
  if (!isObj(v) || typeof v.ok !== 'boolean' || typeof v.message !== 'string') return undefined;
  const r: CheckSetupResult = {
    ok: v.ok,
    message: v.message,
    model: typeof v.model === 'string' ? v.model : null,
    baseUrl: typeof v.baseUrl === 'string' ? v.baseUrl : null,
  };
  if (typeof v.reason === 'string') r.reason = v.reason;
  if (Array.isArray(v.settings)) r.settings = strings(v.settings);
  if (Array.isArray(v.env)) r.env = strings(v.env);
  if (typeof v.latencyMs === 'number') r.latencyMs = v.latencyMs;
  if (typeof v.sandbox === 'string') r.sandbox = v.sandbox;
  if (Array.isArray(v.languageServers)) {
    r.languageServers = v.languageServers.filter(isObj).flatMap((s) =>
      typeof s.name === 'string'
        ? [
            {
              name: s.name,
              command: typeof s.command === 'string' ? s.command : s.name,
              languages: strings(s.languages),
              installed: s.installed === true,
              forFile: s.forFile === true,
            },
          ]
        : [],
    );
  }
  if (typeof v.lspAllowed === 'boolean') r.lspAllowed = v.lspAllowed;
  return r;
}

/**
 * What Check Setup says about code intelligence for the open file: which
 * VS Code extensions answer the agent's lsp tool for it (editor.servers,
 * found as qwen/lsp finds them), and which language servers qwen-ls would
 * start itself where none does (the answer's languageServers and
 * lspAllowed). Empty without an open file.
 */
export function codeIntelligenceSummary(
  file: string | undefined,
  r: Pick<CheckSetupResult, 'languageServers' | 'lspAllowed'>,
  editor: { languageId?: string; servers: string[] } | undefined,
): string {
  if (!file) return '';
  const parts: string[] = [];
  const lang = editor?.languageId ? ` (${editor.languageId})` : '';
  if (editor && editor.servers.length > 0) {
    parts.push(`Code intelligence for ${file}${lang}: VS Code's own language features answer the agent for files they cover, here ${editor.servers.join(', ')}.`);
  } else {
    parts.push(`Code intelligence for ${file}${lang}: no VS Code extension covers it.`);
  }
  if (r.languageServers) {
    const mine = r.languageServers.filter((s) => s.forFile);
    parts.push(
      mine.length > 0
        ? `qwen-ls's own language servers for it: ${mine.map((s) => `${s.name} (${s.installed ? 'installed' : 'not installed'})`).join(', ')}.`
        : 'qwen-ls knows no language server for it (the lsp settings can add one).',
    );
  }
  if (r.lspAllowed === false) parts.push('In this untrusted folder qwen-ls starts none.');
  return parts.join(' ');
}

/** The VS Code settings for the qwen settings.json keys; model.apiKey has none. */
const editorKeys: Record<string, string> = {
  'model.name': 'qwen.model.name',
  'model.baseUrl': 'qwen.model.baseUrl',
};

/** Where the person fixes a problem: VS Code settings to open, and keys that live elsewhere. */
export interface FixPlaces {
  /** VS Code setting ids, in the server's order (for workbench.action.openSettings). */
  vscode: string[];
  /** settings.json keys with no VS Code setting (model.apiKey). */
  elsewhere: string[];
  /** Environment variables the server reads instead. */
  env: string[];
}

export function fixPlaces(p: { settings?: string[]; env?: string[] }): FixPlaces {
  const out: FixPlaces = { vscode: [], elsewhere: [], env: [...(p.env ?? [])] };
  for (const k of p.settings ?? []) {
    const id = editorKeys[k];
    if (id) {
      if (!out.vscode.includes(id)) out.vscode.push(id);
    } else if (!out.elsewhere.includes(k)) out.elsewhere.push(k);
  }
  return out;
}

/**
 * The query for the Settings editor that shows exactly the settings to
 * change: one id as it is, several by their common prefix.
 */
export function settingsQuery(ids: string[]): string {
  if (ids.length === 0) return 'qwen.model';
  if (ids.length === 1) return ids[0];
  let prefix = ids[0];
  for (const id of ids.slice(1)) {
    while (!id.startsWith(prefix)) prefix = prefix.slice(0, prefix.lastIndexOf('.'));
  }
  return prefix === '' ? 'qwen' : prefix;
}

/**
 * The sentence added to the server's message when a key must be set outside
 * VS Code's settings (the API key: environment, Qwen: Set API Key or
 * ~/.qwen/settings.json). Empty when nothing lives elsewhere.
 */
export function elsewhereHint(f: FixPlaces): string {
  if (!f.elsewhere.includes('model.apiKey')) return '';
  const vars = f.env.length ? f.env.join(' or ') : 'OPENAI_API_KEY';
  return `The key has no VS Code setting: run "Qwen: Set API Key", or set ${vars} in the environment VS Code starts with, or model.apiKey in ~/.qwen/settings.json.`;
}

/** The toast buttons for a problem, in order. */
export function fixActions(f: FixPlaces): string[] {
  const out: string[] = [];
  if (f.vscode.length > 0) out.push('Open Settings');
  if (f.elsewhere.includes('model.apiKey')) out.push('Set API Key');
  return out;
}

/** The status word for a setup problem: "no model" when nothing names one, else "error". */
export function statusFor(reason: string): 'no model' | 'error' {
  return reason === 'no_model' || reason === 'no_model_name' ? 'no model' : 'error';
}

/**
 * A time as the person reads it: "just now", "5 min ago", "3 h ago",
 * "yesterday", or the local date. now and the time are in ms.
 */
export function relativeTime(iso: string, now: number, locale?: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.round((now - t) / 1000);
  if (s < 45) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 24) return `${h} h ago`;
  const d = new Date(t);
  const y = new Date(now);
  y.setDate(y.getDate() - 1);
  if (d.getFullYear() === y.getFullYear() && d.getMonth() === y.getMonth() && d.getDate() === y.getDate()) {
    return `yesterday ${d.toLocaleTimeString(locale, { hour: '2-digit', minute: '2-digit' })}`;
  }
  return d.toLocaleDateString(locale, { year: 'numeric', month: 'short', day: 'numeric' });
}

/** How a finished tool call ended: _meta.qwen.outcome, else its status. */
export type Outcome = 'completed' | 'failed' | 'rejected' | 'cancelled';

export function toolOutcome(status: string, meta: unknown): Outcome | undefined {
  if (isObj(meta) && isObj(meta.qwen)) {
    const o = meta.qwen.outcome;
    if (o === 'completed' || o === 'failed' || o === 'rejected' || o === 'cancelled') return o;
  }
  if (status === 'completed' || status === 'failed') return status;
  return undefined;
}
