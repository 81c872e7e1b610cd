// qwen/lsp (protocol.md "Code intelligence"): the agent's `lsp` tool asks
// the editor, and VS Code answers from its own language features, the ones
// the person sees (their extensions, their settings, their unsaved text),
// through the vscode.execute*Provider commands and languages.getDiagnostics.
// Only answering: results go back as LSP JSON (file URIs, 0-based UTF-16
// positions, as the language client negotiates), and qwen-ls formats them
// for the model. No language server is started here or by qwen-ls for a
// document an extension covers.
import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import type { Converter as Code2Protocol } from 'vscode-languageclient/lib/common/codeConverter';
import {
  coveringExtensions,
  diagnosticsWait,
  DiagnosticVersions,
  kindMatches,
  LspAnswer,
  LspLocation,
  LspRange,
  mergeHovers,
  notChecked,
  notCovered,
  withoutDeclarations,
} from './answer';

/** RequestCancelled of LSP: the answer to a request whose token was cancelled. */
const cancelled = -32800;

class Cancelled extends Error {}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function asPosition(p: unknown): vscode.Position {
  if (!isObj(p) || typeof p.line !== 'number' || typeof p.character !== 'number') throw new ResponseError(-32602, 'qwen/lsp: a position needs line and character');
  return new vscode.Position(p.line, p.character);
}

function asRange(r: unknown): vscode.Range {
  if (!isObj(r)) throw new ResponseError(-32602, 'qwen/lsp: a range needs start and end');
  return new vscode.Range(asPosition(r.start), asPosition(r.end));
}

function asUri(u: unknown): vscode.Uri {
  if (typeof u !== 'string' || u === '') throw new ResponseError(-32602, 'qwen/lsp: a uri is missing');
  return vscode.Uri.parse(u, true);
}

function docUri(params: Record<string, unknown>): vscode.Uri {
  return asUri(isObj(params.textDocument) ? params.textDocument.uri : undefined);
}

/** An item of prepareCallHierarchy, found again by what its LSP form keeps. */
function itemKey(uri: string, r: LspRange, name: string): string {
  return `${uri}#${r.start.line}:${r.start.character}-${r.end.line}:${r.end.character}#${name}`;
}

export class EditorLsp implements vscode.Disposable {
  readonly diagnostics = new DiagnosticVersions();
  private readonly subscriptions: vscode.Disposable[] = [];
  /**
   * VS Code's call hierarchy items of recent prepareCallHierarchy answers:
   * vscode.provideIncomingCalls needs the editor's own object, which the
   * LSP form cannot carry. A miss (an old or rebuilt item) prepares again
   * at the item's place.
   */
  private readonly items = new Map<string, vscode.CallHierarchyItem>();

  /**
   * c2p: the language client's code-to-protocol converter; selfId: this
   * extension's id, which does not count as covering a language.
   */
  constructor(
    private readonly c2p: () => Code2Protocol,
    private readonly selfId: string,
  ) {
    this.subscriptions.push(
      vscode.languages.onDidChangeDiagnostics((e) => {
        for (const uri of e.uris) {
          const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
          if (doc) this.diagnostics.record(uri.toString(), doc.version);
        }
      }),
      vscode.workspace.onDidCloseTextDocument((d) => this.diagnostics.forget(d.uri.toString())),
    );
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.items.clear();
  }

  /** Answers one qwen/lsp request; errors become JSON-RPC errors (the editor's error, shown to the model). */
  async handle(req: unknown, token: vscode.CancellationToken): Promise<LspAnswer | ResponseError<void>> {
    try {
      if (!isObj(req) || typeof req.method !== 'string') return new ResponseError(-32602, 'qwen/lsp: method is missing');
      const params = isObj(req.params) ? req.params : {};
      return await this.answer(req.method, params, token);
    } catch (err) {
      if (err instanceof Cancelled || token.isCancellationRequested) return new ResponseError(cancelled, 'qwen/lsp: cancelled');
      if (err instanceof ResponseError) return err;
      return new ResponseError(-32603, err instanceof Error ? err.message : String(err));
    }
  }

  private async answer(method: string, params: Record<string, unknown>, token: vscode.CancellationToken): Promise<LspAnswer> {
    const c = this.c2p();
    switch (method) {
      case 'textDocument/definition':
      case 'textDocument/implementation': {
        const uri = docUri(params);
        const command = method === 'textDocument/definition' ? 'vscode.executeDefinitionProvider' : 'vscode.executeImplementationProvider';
        const got = await this.run<(vscode.Location | vscode.LocationLink)[]>(token, command, uri, asPosition(params.position));
        return this.served(uri, this.locations(c, got));
      }
      case 'textDocument/references': {
        const uri = docUri(params);
        const pos = asPosition(params.position);
        const got = await this.run<vscode.Location[]>(token, 'vscode.executeReferenceProvider', uri, pos);
        let refs: LspLocation[] = (got ?? []).map((l) => ({ uri: c.asUri(l.uri), range: c.asRange(l.range) }));
        if (isObj(params.context) && params.context.includeDeclaration === false && refs.length > 0) {
          const decls = await this.run<(vscode.Location | vscode.LocationLink)[]>(token, 'vscode.executeDefinitionProvider', uri, pos);
          refs = withoutDeclarations(refs, this.locations(c, decls));
        }
        return this.served(uri, refs);
      }
      case 'textDocument/hover': {
        const uri = docUri(params);
        const got = await this.run<vscode.Hover[]>(token, 'vscode.executeHoverProvider', uri, asPosition(params.position));
        const hover = mergeHovers((got ?? []).map((h) => ({ contents: h.contents, range: h.range ? c.asRange(h.range) : undefined })));
        return this.served(uri, hover);
      }
      case 'textDocument/documentSymbol': {
        const uri = docUri(params);
        const got = await this.run<(vscode.SymbolInformation | vscode.DocumentSymbol)[]>(token, 'vscode.executeDocumentSymbolProvider', uri);
        return this.served(uri, (got ?? []).map((s) => documentSymbol(c, s)));
      }
      case 'workspace/symbol': {
        const query = typeof params.query === 'string' ? params.query : '';
        const got = await this.run<vscode.SymbolInformation[]>(token, 'vscode.executeWorkspaceSymbolProvider', query);
        const result = (got ?? []).map((s) => ({
          name: s.name,
          kind: c.asSymbolKind(s.kind),
          ...(s.tags?.length ? { tags: c.asSymbolTags(s.tags) } : {}),
          ...(s.containerName ? { containerName: s.containerName } : {}),
          location: { uri: c.asUri(s.location.uri), range: c.asRange(s.location.range) },
        }));
        // No document says which language: an empty answer is not the
        // editor's word, so a server of qwen-ls's own may search instead.
        if (result.length === 0) return { served: false, reason: 'no workspace symbol provider in VS Code found a match' };
        return { served: true, result };
      }
      case 'textDocument/prepareCallHierarchy': {
        const uri = docUri(params);
        const got = await this.run<vscode.CallHierarchyItem[]>(token, 'vscode.prepareCallHierarchy', uri, asPosition(params.position));
        return this.served(uri, (got ?? []).map((i) => this.callItem(c, i)));
      }
      case 'callHierarchy/incomingCalls':
      case 'callHierarchy/outgoingCalls': {
        const incoming = method === 'callHierarchy/incomingCalls';
        const { uri, item } = await this.findItem(c, params.item, token);
        if (!item) return this.served(uri, []);
        if (incoming) {
          const got = await this.run<vscode.CallHierarchyIncomingCall[]>(token, 'vscode.provideIncomingCalls', item);
          return this.served(uri, (got ?? []).map((x) => ({ from: this.callItem(c, x.from), fromRanges: c.asRanges(x.fromRanges) })));
        }
        const got = await this.run<vscode.CallHierarchyOutgoingCall[]>(token, 'vscode.provideOutgoingCalls', item);
        return this.served(uri, (got ?? []).map((x) => ({ to: this.callItem(c, x.to), fromRanges: c.asRanges(x.fromRanges) })));
      }
      case 'textDocument/codeAction': {
        const uri = docUri(params);
        const range = asRange(params.range);
        const ctx = isObj(params.context) ? params.context : {};
        const only = Array.isArray(ctx.only) ? ctx.only.filter((k): k is string => typeof k === 'string') : undefined;
        // VS Code takes one kind: several are asked one by one. The
        // context's diagnostics are VS Code's own markers in the range.
        const asks = only && only.length > 0 ? only : [undefined];
        const seen = new Set<string>();
        const result: Record<string, unknown>[] = [];
        for (const kind of asks) {
          const got = await this.run<(vscode.CodeAction | vscode.Command)[]>(token, 'vscode.executeCodeActionProvider', uri, range, kind);
          for (const a of got ?? []) {
            const out = codeAction(a);
            if (!kindMatches(out.kind as string | undefined, only)) continue;
            const key = `${out.kind ?? ''}\u0000${out.title}`;
            if (seen.has(key)) continue;
            seen.add(key);
            result.push(out);
          }
        }
        return this.served(uri, result);
      }
      case 'qwen/diagnostics':
        return this.diagnosticsAnswer(c, params, token);
      default:
        // A method from a newer qwen-ls: its own language servers may answer it.
        return { served: false, reason: `this VS Code extension does not answer ${method}` };
    }
  }

  /** Runs one of VS Code's commands, given up (not waited for) when the request is cancelled. */
  private async run<T>(token: vscode.CancellationToken, command: string, ...args: unknown[]): Promise<T | undefined> {
    if (token.isCancellationRequested) throw new Cancelled();
    let sub: vscode.Disposable | undefined;
    try {
      return await Promise.race([
        Promise.resolve(vscode.commands.executeCommand<T>(command, ...args)),
        new Promise<never>((_, reject) => (sub = token.onCancellationRequested(() => reject(new Cancelled())))),
      ]);
    } finally {
      sub?.dispose();
    }
  }

  /**
   * The answer for a document: a result is served whoever gave it; an
   * empty one only when an extension covers the document's language
   * (answer.ts, coveringExtensions), else qwen-ls may ask its own server.
   */
  private async served(uri: vscode.Uri, result: unknown): Promise<LspAnswer> {
    const { languageId, servers } = await this.coverage(uri);
    const empty = result === null || result === undefined || (Array.isArray(result) && result.length === 0);
    if (empty && servers.length === 0) return { served: false, reason: languageId ? notCovered(languageId) : `VS Code cannot open ${uri.toString()}` };
    return { served: true, result: result ?? null, ...(servers.length ? { servers } : {}) };
  }

  /** The document's language and the extensions that bring features for it. */
  async coverage(uri: vscode.Uri): Promise<{ languageId?: string; servers: string[] }> {
    let languageId = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString())?.languageId;
    if (!languageId) {
      try {
        languageId = (await vscode.workspace.openTextDocument(uri)).languageId;
      } catch {
        return { servers: [] };
      }
    }
    return { languageId, servers: coveringExtensions(vscode.extensions.all, languageId, this.selfId) };
  }

  /** Definitions and implementations as Location[]: a LocationLink points at its name (targetSelectionRange). */
  private locations(c: Code2Protocol, got: (vscode.Location | vscode.LocationLink)[] | undefined): LspLocation[] {
    return (got ?? []).map((l) =>
      'targetUri' in l ? { uri: c.asUri(l.targetUri), range: c.asRange(l.targetSelectionRange ?? l.targetRange) } : { uri: c.asUri(l.uri), range: c.asRange(l.range) },
    );
  }

  private callItem(c: Code2Protocol, i: vscode.CallHierarchyItem): Record<string, unknown> {
    const uri = c.asUri(i.uri);
    const selectionRange = c.asRange(i.selectionRange);
    this.items.set(itemKey(uri, selectionRange, i.name), i);
    if (this.items.size > 200) this.items.delete(this.items.keys().next().value as string);
    return {
      name: i.name,
      kind: c.asSymbolKind(i.kind),
      ...(i.tags?.length ? { tags: c.asSymbolTags(i.tags) } : {}),
      ...(i.detail ? { detail: i.detail } : {}),
      uri,
      range: c.asRange(i.range),
      selectionRange,
    };
  }

  /** The editor's item for an LSP call hierarchy item: remembered, else prepared again at its place. */
  private async findItem(c: Code2Protocol, raw: unknown, token: vscode.CancellationToken): Promise<{ uri: vscode.Uri; item?: vscode.CallHierarchyItem }> {
    if (!isObj(raw) || typeof raw.name !== 'string') throw new ResponseError(-32602, 'qwen/lsp: the call hierarchy item is missing');
    const uri = asUri(raw.uri);
    const sel = asRange(raw.selectionRange);
    const key = itemKey(c.asUri(uri), c.asRange(sel), raw.name);
    const known = this.items.get(key);
    if (known) return { uri, item: known };
    const again = await this.run<vscode.CallHierarchyItem[]>(token, 'vscode.prepareCallHierarchy', uri, sel.start);
    const item = (again ?? []).find((i) => i.name === raw.name) ?? again?.[0];
    if (item) this.callItem(c, item);
    return { uri, item };
  }

  private async diagnosticsAnswer(c: Code2Protocol, params: Record<string, unknown>, token: vscode.CancellationToken): Promise<LspAnswer> {
    if (params.uri === undefined) {
      const result = vscode.languages
        .getDiagnostics()
        .filter(([u, d]) => u.scheme === 'file' && d.length > 0)
        .map(([u, d]) => ({ uri: c.asUri(u), diagnostics: c.asDiagnosticsSync(d) }));
      return { served: true, result };
    }
    const uri = asUri(params.uri);
    const key = uri.toString();
    // Many language extensions (TypeScript among them) check only the
    // files open in an editor: for any other file an empty list is no
    // verdict, and nothing would come to wait for.
    const checked = inEditor(key) || vscode.languages.getDiagnostics(uri).length > 0;
    if (checked && typeof params.version === 'number' && vscode.workspace.textDocuments.some((d) => d.uri.toString() === key)) {
      const ms = typeof params.timeoutMs === 'number' ? Math.min(Math.max(0, params.timeoutMs), diagnosticsWait.max) : diagnosticsWait.default;
      let sub: vscode.Disposable | undefined;
      try {
        await this.diagnostics.waitFor(key, params.version, ms, (cancel) => (sub = token.onCancellationRequested(cancel)));
      } finally {
        sub?.dispose();
      }
      if (token.isCancellationRequested) throw new Cancelled();
    }
    const diags = vscode.languages.getDiagnostics(uri);
    const { languageId, servers } = await this.coverage(uri);
    if (diags.length === 0 && servers.length === 0) return { served: false, reason: languageId ? notCovered(languageId) : `VS Code cannot open ${key}` };
    if (diags.length === 0 && !inEditor(key)) return { served: false, reason: notChecked };
    return { served: true, result: [{ uri: c.asUri(uri), diagnostics: c.asDiagnosticsSync(diags) }], ...(servers.length ? { servers } : {}) };
  }
}

/** Whether a tab of the window shows the document (as text, or as the changed side of a diff). */
function inEditor(uri: string): boolean {
  return vscode.window.tabGroups.all.some((g) =>
    g.tabs.some((t) => {
      const input = t.input;
      if (input instanceof vscode.TabInputText) return input.uri.toString() === uri;
      if (input instanceof vscode.TabInputTextDiff) return input.modified.toString() === uri;
      return false;
    }),
  );
}

/** A symbol of executeDocumentSymbolProvider as an LSP DocumentSymbol (VS Code's are both kinds at once). */
function documentSymbol(c: Code2Protocol, s: vscode.SymbolInformation | vscode.DocumentSymbol): Record<string, unknown> {
  const hier = 'selectionRange' in s && s.selectionRange !== undefined;
  const range = hier ? (s as vscode.DocumentSymbol).range : (s as vscode.SymbolInformation).location.range;
  const children = hier ? ((s as vscode.DocumentSymbol).children ?? []) : [];
  const detail = hier ? (s as vscode.DocumentSymbol).detail : undefined;
  return {
    name: s.name,
    ...(detail ? { detail } : {}),
    kind: c.asSymbolKind(s.kind),
    ...(s.tags?.length ? { tags: c.asSymbolTags(s.tags) } : {}),
    range: c.asRange(range),
    selectionRange: c.asRange(hier ? (s as vscode.DocumentSymbol).selectionRange : range),
    ...(children.length ? { children: children.map((x) => documentSymbol(c, x)) } : {}),
  };
}

/** What qwen-ls reads of a code action (listed, never applied): title, kind, isPreferred, disabled. */
function codeAction(a: vscode.CodeAction | vscode.Command): Record<string, unknown> {
  if (typeof (a as vscode.Command).command === 'string') {
    const cmd = a as vscode.Command;
    return { title: cmd.title, command: cmd.command };
  }
  const ca = a as vscode.CodeAction;
  return {
    title: ca.title,
    ...(ca.kind ? { kind: ca.kind.value } : {}),
    ...(ca.isPreferred ? { isPreferred: true } : {}),
    ...(ca.disabled ? { disabled: { reason: ca.disabled.reason } } : {}),
  };
}

