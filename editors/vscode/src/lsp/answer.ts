// The parts of answering qwen/lsp (protocol.md "Code intelligence") that do
// not need VS Code running: which extensions cover a language, how several
// hovers become the one hover LSP has, and the wait for diagnostics of a
// document version. No vscode import: unit-tested under node, used by
// handler.ts.

/** The answer of qwen/lsp. */
export type LspAnswer = { served: true; result: unknown; servers?: string[] } | { served: false; reason?: string };

/** What coveringExtensions reads of an extension (vscode.Extension has these). */
export interface ExtensionLike {
  id: string;
  packageJSON: unknown;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The extensions that bring language features for languageId: those with
 * code (a `main` or `browser` entry; grammar-only extensions such as the
 * built-in `vscode.go` have none) that activate on that language
 * (`onLanguage:<id>`) or contribute it (`contributes.languages`, which
 * VS Code turns into that activation event). qwen-ls's own extension
 * (selfId) does not count: it answers no language requests for files.
 *
 * This is the test for `served`: a request with a result is served
 * whoever answered it; an empty result is served (the editor's answer is
 * "nothing") only when such an extension covers the document, and
 * otherwise qwen-ls may ask a language server of its own.
 */
export function coveringExtensions(exts: readonly ExtensionLike[], languageId: string, selfId?: string): string[] {
  const out: string[] = [];
  for (const e of exts) {
    if (selfId !== undefined && e.id.toLowerCase() === selfId.toLowerCase()) continue;
    const pj = e.packageJSON;
    if (!isObj(pj)) continue;
    if (typeof pj.main !== 'string' && typeof pj.browser !== 'string') continue;
    const events = Array.isArray(pj.activationEvents) ? pj.activationEvents : [];
    const activates = events.includes(`onLanguage:${languageId}`);
    const contributes =
      isObj(pj.contributes) && Array.isArray(pj.contributes.languages) && pj.contributes.languages.some((l) => isObj(l) && l.id === languageId);
    if (activates || contributes) out.push(e.id);
  }
  return out.sort();
}

/** The reason of a served:false answer for a document no extension covers. */
export function notCovered(languageId: string): string {
  return `no extension in VS Code provides language features for ${languageId} files`;
}

/**
 * The reason of a served:false answer to qwen/diagnostics for a file with
 * no diagnostics that no editor shows: extensions such as TypeScript check
 * only open files, so an empty list says nothing about it.
 */
export const notChecked = 'VS Code reports diagnostics for this file only while it is open in an editor, and it is not';

/** A hover content as VS Code holds it: a MarkdownString, or a deprecated MarkedString. */
export type HoverContent = string | { value: string; language?: string };

/** One hover content as markdown (a MarkedString with a language becomes a fenced block). */
export function markdownOf(c: HoverContent): string {
  if (typeof c === 'string') return c;
  if (typeof c.language === 'string') return '```' + c.language + '\n' + c.value + '\n```';
  return c.value;
}

export interface LspPosition {
  line: number;
  character: number;
}
export interface LspRange {
  start: LspPosition;
  end: LspPosition;
}

/**
 * The hovers of every provider as the one Hover of LSP: their contents as
 * markdown, one after another with a rule between providers (as VS Code
 * shows them), and the first range. null when there is nothing to show.
 */
export function mergeHovers(hovers: readonly { contents: readonly HoverContent[]; range?: LspRange }[]): { contents: { kind: 'markdown'; value: string }; range?: LspRange } | null {
  const parts: string[] = [];
  let range: LspRange | undefined;
  for (const h of hovers) {
    const text = h.contents
      .map(markdownOf)
      .filter((s) => s.trim() !== '')
      .join('\n\n');
    if (text === '') continue;
    parts.push(text);
    range ??= h.range;
  }
  if (parts.length === 0) return null;
  return { contents: { kind: 'markdown', value: parts.join('\n\n---\n\n') }, ...(range ? { range } : {}) };
}

export interface LspLocation {
  uri: string;
  range: LspRange;
}

const samePos = (a: LspPosition, b: LspPosition) => a.line === b.line && a.character === b.character;
const sameLocation = (a: LspLocation, b: LspLocation) => a.uri === b.uri && samePos(a.range.start, b.range.start) && samePos(a.range.end, b.range.end);

/**
 * References without the declarations, for includeDeclaration: false.
 * VS Code's reference command always includes them (its context has
 * includeDeclaration: true); a reference that is exactly a definition's
 * range is the declaration.
 */
export function withoutDeclarations(refs: readonly LspLocation[], decls: readonly LspLocation[]): LspLocation[] {
  return refs.filter((r) => !decls.some((d) => sameLocation(r, d)));
}

/** Whether a code action kind is one of those asked for (LSP's hierarchy: `refactor` covers `refactor.extract`). */
export function kindMatches(kind: string | undefined, only: readonly string[] | undefined): boolean {
  if (!only || only.length === 0) return true;
  if (kind === undefined) return false;
  return only.some((o) => o === '' || kind === o || kind.startsWith(o + '.'));
}

/**
 * The document version at which each document's diagnostics last changed,
 * and waits for a version. record() is called from
 * languages.onDidChangeDiagnostics with the document's version at that
 * moment; waitFor() resolves once a change was recorded at that version or
 * later, or when the time is up or the request is cancelled (whichever
 * comes first), with whether the version was reached.
 */
export class DiagnosticVersions {
  private readonly versions = new Map<string, number>();
  private waiters: { uri: string; version: number; done: (reached: boolean) => void }[] = [];

  record(uri: string, version: number): void {
    this.versions.set(uri, Math.max(this.versions.get(uri) ?? version, version));
    const ready = this.waiters.filter((w) => w.uri === uri && version >= w.version);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.done(true);
  }

  /** The document is closed: a later one of the same name starts its versions again. */
  forget(uri: string): void {
    this.versions.delete(uri);
  }

  /** The version at which the diagnostics of uri last changed, if any change was seen. */
  get(uri: string): number | undefined {
    return this.versions.get(uri);
  }

  waitFor(uri: string, version: number, timeoutMs: number, onCancel?: (cancel: () => void) => void): Promise<boolean> {
    const seen = this.versions.get(uri);
    if (seen !== undefined && seen >= version) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = {
        uri,
        version,
        done: (reached: boolean) => {
          clearTimeout(timer);
          resolve(reached);
        },
      };
      const end = () => {
        if (!this.waiters.includes(w)) return;
        this.waiters = this.waiters.filter((x) => x !== w);
        w.done(false);
      };
      const timer = setTimeout(end, Math.max(0, timeoutMs));
      this.waiters.push(w);
      onCancel?.(end);
    });
  }

  /** How many waits are open (for tests). */
  get pending(): number {
    return this.waiters.length;
  }
}

/** The default and the longest wait of qwen/diagnostics with a version, in ms. */
export const diagnosticsWait = { default: 2000, max: 30000 };
