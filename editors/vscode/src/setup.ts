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

/** The command that stores the key VS Code gives qwen-ls (as OPENAI_API_KEY). */
export const setApiKeyCommand = '"Qwen: Set API Key"';

/** The variable a problem's key comes from when the settings name one (env.<KEY>), else undefined. */
function envKeyOf(p: Pick<SetupProblem, 'settings'>): string | undefined {
  const s = p.settings.find((k) => k.startsWith('env.'));
  return s ? s.slice(4) : undefined;
}

/** Whether Qwen: Set API Key fixes the problem: the key it stores reaches qwen-ls as OPENAI_API_KEY. */
export function keyFixable(p: Pick<SetupProblem, 'settings'>): boolean {
  return p.settings.includes('model.apiKey') || envKeyOf(p) === 'OPENAI_API_KEY';
}

/**
 * A setup problem in VS Code's words: its short status ("no model" only
 * when nothing is configured; otherwise what is missing or failed) and the
 * sentence for the chat and the toast, naming qwen.model.name,
 * qwen.model.baseUrl and Qwen: Set API Key rather than the server's
 * settings.json keys and variables. A problem this extension does not
 * know keeps the server's message.
 */
export function setupText(p: SetupProblem, serverMessage: string): { status: string; message: string } {
  const at = p.baseUrl ? p.baseUrl : 'The endpoint';
  const model = p.model ? `The model ${p.model}` : 'The model';
  switch (p.reason) {
    case 'no_model':
      return {
        status: 'no model',
        message:
          'No model is configured: set qwen.model.name and qwen.model.baseUrl (any OpenAI-compatible endpoint; a local one such as Ollama needs no key), ' +
          `and run ${setApiKeyCommand} if the endpoint needs a key.`,
      };
    case 'no_model_name':
      return { status: 'no model name', message: `${p.baseUrl ? `The endpoint ${p.baseUrl}` : 'An endpoint'} is set, but no model name: set qwen.model.name.` };
    case 'no_endpoint':
      return {
        status: 'no endpoint',
        message:
          `${model} has no endpoint and no API key: set qwen.model.baseUrl to an OpenAI-compatible endpoint (a local one such as Ollama needs no key), ` +
          `or run ${setApiKeyCommand} for DashScope or OpenAI.`,
      };
    case 'no_api_key': {
      const key = envKeyOf(p);
      if (key && key !== 'OPENAI_API_KEY') {
        return {
          status: 'no API key',
          message: `${model} takes its key from ${key}, which is not set: set ${key} in the environment VS Code starts with, or in ~/.qwen/.env.`,
        };
      }
      return { status: 'no API key', message: `${at} needs an API key: run ${setApiKeyCommand}.` };
    }
    case 'model_auth':
      return { status: 'API key refused', message: `${at} refused the API key: set the right one with ${setApiKeyCommand}.` };
    case 'model_unreachable':
      return {
        status: 'model unreachable',
        message: `Nothing answers at ${p.baseUrl ?? 'the model endpoint'}: start the model server, or set qwen.model.baseUrl to an endpoint that runs.`,
      };
    case 'model_not_found':
      return {
        status: 'model not found',
        message: `${at} does not know ${p.model ? `the model ${p.model}` : 'the model'}: check qwen.model.name and qwen.model.baseUrl.`,
      };
    default:
      return { status: 'error', message: serverMessage };
  }
}

/** The toast buttons for a problem, in order. */
export function fixActions(f: FixPlaces, p?: Pick<SetupProblem, 'settings'>): string[] {
  const out: string[] = [];
  if (f.vscode.length > 0) out.push('Open Settings');
  if (f.elsewhere.includes('model.apiKey') || (p !== undefined && keyFixable(p))) out.push('Set API Key');
  return out;
}

/**
 * Whether what VS Code can see reaches a model, as qwen-ls judges it: a
 * base URL (qwen.model.baseUrl, else OPENAI_BASE_URL) on loopback needs no
 * key; any other endpoint, and the default one, need a key. When this is
 * false, a setup check is safe to send (it fails before any request unless
 * the qwen settings files or a .env supply what is missing).
 */
export function endpointReachable(baseUrl: string, haveKey: boolean, envBaseUrl?: string): boolean {
  if (haveKey) return true;
  const url = baseUrl !== '' ? baseUrl : (envBaseUrl ?? '').trim();
  if (url === '') return false;
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '127.0.0.1' || host === '::1';
  } catch {
    return false;
  }
}

/** Whether a problem is a part of the setup that is missing (rather than an endpoint that failed). */
export function isMissing(reason: string): boolean {
  return reason.startsWith('no_');
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
