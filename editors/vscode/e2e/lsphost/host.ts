// Test only: the extension's qwen/lsp handler (src/lsp/handler.ts) run
// inside real VS Code (code-server) against its built-in TypeScript
// language features, on testdata/ts-workspace. e2e/run.mjs installs this
// as an extension of its own, runs the command "Qwen LSP Host: Run the
// qwen/lsp Tests" and reads the results from the file QWEN_LSP_HOST_OUT
// names: [{name, ok, error?, detail?}]. Each case sends the handler what
// qwen-ls sends (LSP params: file URIs, 0-based UTF-16 positions) and checks
// the LSP JSON it answers.
import * as vscode from 'vscode';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { createConverter } from 'vscode-languageclient/lib/common/codeConverter';
import { EditorLsp } from '../../src/lsp/handler';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class Failure extends Error {}

function check(cond: unknown, what: string, got?: unknown): void {
  if (!cond) throw new Failure(`${what}${got === undefined ? '' : `: got ${JSON.stringify(got).slice(0, 1500)}`}`);
}

const none = new vscode.CancellationTokenSource().token;

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(vscode.commands.registerCommand('qwenLspHost.run', () => run(context)));
}

async function run(context: vscode.ExtensionContext): Promise<void> {
  const out = process.env.QWEN_LSP_HOST_OUT ?? path.join(os.tmpdir(), 'qwen-lsp-host.json');
  const results: { name: string; ok: boolean; error?: string; ms: number }[] = [];
  const write = () => fs.writeFileSync(out + '.tmp', JSON.stringify(results, null, 2));
  const lsp = new EditorLsp(() => createConverter(), 'qwen-ls.qwen-ls');
  context.subscriptions.push(lsp);
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!root) {
    results.push({ name: 'setup', ok: false, error: 'no workspace folder', ms: 0 });
    fs.writeFileSync(out, JSON.stringify(results));
    return;
  }
  const main = vscode.Uri.joinPath(root, 'src/main.ts');
  const math = vscode.Uri.joinPath(root, 'src/math.ts');
  const mainText = fs.readFileSync(main.fsPath, 'utf8');
  const mathText = fs.readFileSync(math.fsPath, 'utf8');
  /** The 0-based position of the nth occurrence of word in text. */
  const at = (text: string, word: string, nth = 1) => {
    let i = -1;
    for (let k = 0; k < nth; k++) i = text.indexOf(word, i + 1);
    if (i < 0) throw new Error(`${word} not in the file`);
    const before = text.slice(0, i).split('\n');
    return { line: before.length - 1, character: before[before.length - 1].length };
  };
  const req = (method: string, params: unknown, token = none) => lsp.handle({ sessionId: 's1', method, params }, token) as Promise<Json>;
  const doc = (uri: vscode.Uri, text: string, word: string, nth = 1) => ({ textDocument: { uri: uri.toString() }, position: at(text, word, nth) });
  const addCall = doc(main, mainText, 'add(sum');

  const cases: [string, () => Promise<void>][] = [
    [
      'TypeScript is ready: a definition answers from the other file',
      async () => {
        // While it loads the project, TypeScript answers from the one
        // file (the import in main.ts); ready means it sees math.ts.
        await vscode.window.showTextDocument(main);
        const deadline = Date.now() + 120000;
        for (;;) {
          const a = await req('textDocument/definition', addCall);
          if (a.served && a.result?.some((l: Json) => l.uri === math.toString())) return;
          if (Date.now() > deadline) throw new Failure(`no definition after 120 s: ${JSON.stringify(a)}`);
          await sleep(500);
        }
      },
    ],
    [
      'goToDefinition across files: math.ts, at the name, served by TypeScript',
      async () => {
        const a = await req('textDocument/definition', addCall);
        check(a.served === true, 'served', a);
        check(a.servers?.includes('vscode.typescript-language-features'), 'servers names the TypeScript extension', a);
        check(a.result.length === 1 && a.result[0].uri === math.toString(), 'one location in math.ts', a);
        const want = at(mathText, 'add(a');
        check(a.result[0].range.start.line === want.line && a.result[0].range.start.character === want.character, `the name at ${want.line}:${want.character}`, a);
        check(a.result[0].range.end.character === want.character + 3, 'the range spans the name', a);
      },
    ],
    [
      'findReferences, with and without the declaration',
      async () => {
        const params = { ...doc(math, mathText, 'add(a'), context: { includeDeclaration: true } };
        const all = await req('textDocument/references', params);
        check(all.served, 'served', all);
        const files = all.result.map((l: Json) => path.basename(vscode.Uri.parse(l.uri).fsPath)).sort();
        // The declaration, the import and the call.
        check(JSON.stringify(files) === JSON.stringify(['main.ts', 'main.ts', 'math.ts']), 'references in both files', all);
        const refs = await req('textDocument/references', { ...params, context: { includeDeclaration: false } });
        check(refs.result.length === 2 && refs.result.every((l: Json) => l.uri === main.toString()), 'without the declaration: the two in main.ts', refs);
      },
    ],
    [
      'hover: signature and doc as one markdown hover',
      async () => {
        const a = await req('textDocument/hover', addCall);
        check(a.served && a.result?.contents?.kind === 'markdown', 'a markdown hover', a);
        check(a.result.contents.value.includes('add(a: number, b: number): number'), 'the signature', a);
        check(a.result.contents.value.includes('Adds two numbers.'), 'the doc comment', a);
        check(a.result.range && a.result.range.start.line === addCall.position.line, 'the range of the word', a);
      },
    ],
    [
      'documentSymbol: a hierarchy with LSP kinds',
      async () => {
        const a = await req('textDocument/documentSymbol', { textDocument: { uri: math.toString() } });
        check(a.served, 'served', a);
        const byName = new Map<string, Json>(a.result.map((s: Json) => [s.name, s]));
        check(byName.get('add')?.kind === 12, 'add is a Function (12)', a);
        check(byName.get('Shape')?.kind === 11, 'Shape is an Interface (11)', a);
        const square = byName.get('Square');
        check(square?.kind === 5, 'Square is a Class (5)', a);
        check(square.children?.some((c: Json) => c.name === 'area' && c.kind === 6), 'Square has the method area (6)', square);
        check(square.selectionRange.start.line === at(mathText, 'Square').line, 'the selection range is the name', square);
      },
    ],
    [
      'workspaceSymbol: found by name',
      async () => {
        const a = await req('workspace/symbol', { query: 'Square' });
        check(a.served, 'served', a);
        const s = a.result.find((x: Json) => x.name === 'Square');
        check(s && s.location.uri === math.toString() && s.kind === 5, 'Square in math.ts', a);
        const nothing = await req('workspace/symbol', { query: 'zzzNoSuchSymbolQq' });
        check(nothing.served === false, 'no match: not served, so qwen-ls may ask its own server', nothing);
      },
    ],
    [
      'goToImplementation: the class that implements the interface',
      async () => {
        const a = await req('textDocument/implementation', doc(math, mathText, 'Shape'));
        check(a.served, 'served', a);
        check(a.result.some((l: Json) => l.uri === math.toString() && l.range.start.line === at(mathText, 'Square').line), 'Square', a);
      },
    ],
    [
      'call hierarchy: prepare, incoming and outgoing calls, and an item not prepared here',
      async () => {
        const p = await req('textDocument/prepareCallHierarchy', doc(math, mathText, 'add(a'));
        check(p.served && p.result.length === 1 && p.result[0].name === 'add', 'the item add', p);
        const item = p.result[0];
        check(item.kind === 12 && item.uri === math.toString(), 'a function in math.ts', item);
        const inc = await req('callHierarchy/incomingCalls', { item });
        check(inc.served && inc.result.some((c: Json) => c.from.name === 'total' && c.from.uri === main.toString()), 'called from total', inc);
        const call = inc.result.find((c: Json) => c.from.name === 'total');
        check(call.fromRanges[0].start.line === addCall.position.line, 'at the call', call);
        const out = await req('callHierarchy/outgoingCalls', { item: call.from });
        check(out.served && out.result.some((c: Json) => c.to.name === 'add' && c.to.uri === math.toString()), 'total calls add', out);
        // An item as qwen-ls kept it, asked of a handler that never saw it: prepared again at its place.
        const fresh = new EditorLsp(() => createConverter(), 'qwen-ls.qwen-ls');
        try {
          const again = (await fresh.handle({ method: 'callHierarchy/incomingCalls', params: { item: JSON.parse(JSON.stringify(item)) } }, none)) as Json;
          check(again.served && again.result.some((c: Json) => c.from.name === 'total'), 'the same calls', again);
        } finally {
          fresh.dispose();
        }
      },
    ],
    [
      'codeActions: listed with title and kind, filtered by kind',
      async () => {
        const s = at(mathText, 'a + b');
        const range = { start: s, end: { line: s.line, character: s.character + 5 } };
        const a = await req('textDocument/codeAction', { textDocument: { uri: math.toString() }, range, context: { diagnostics: [], only: ['refactor.extract'] } });
        check(a.served && a.result.length > 0, 'some extract refactorings', a);
        check(a.result.every((x: Json) => typeof x.title === 'string' && x.kind.startsWith('refactor.extract')), 'only refactor.extract kinds', a);
        check(a.result.every((x: Json) => x.edit === undefined && x.command === undefined), 'listed, not applied: no edits or commands', a);
      },
    ],
    [
      'diagnostics: an edit that breaks the types gets TypeScript’s message once published for that version',
      async () => {
        const editor = await vscode.window.showTextDocument(main);
        const before = await req('qwen/diagnostics', { uri: main.toString() });
        check(before.served && before.result[0].diagnostics.length === 0, 'no errors before', before);
        const end = editor.document.lineAt(editor.document.lineCount - 1).range.end;
        const edit = new vscode.WorkspaceEdit();
        edit.insert(main, end, '\nexport const broken: number = "oops";\n');
        check(await vscode.workspace.applyEdit(edit), 'the edit applied');
        const version = editor.document.version;
        try {
          const a = await req('qwen/diagnostics', { uri: main.toString(), version, timeoutMs: 30000 });
          check(a.served && a.servers?.includes('vscode.typescript-language-features'), 'served by TypeScript', a);
          const d = a.result[0].diagnostics;
          check(d.some((x: Json) => x.message.includes("Type 'string' is not assignable to type 'number'") && x.severity === 1 && x.source === 'ts'), 'the type error, severity Error, source ts', a);
          check(lsp.diagnostics.get(main.toString())! >= version, 'the change was recorded at that version');
          // Without a uri: every document with diagnostics.
          const all = await req('qwen/diagnostics', {});
          check(all.served && all.result.some((e: Json) => e.uri === main.toString() && e.diagnostics.length > 0), 'main.ts among all', all);
          // A version not reached: answered when the time is up.
          const later = await req('qwen/diagnostics', { uri: main.toString(), version: version + 1000, timeoutMs: 300 });
          check(later.served && later.result[0].diagnostics.length > 0, 'answered at the timeout with what there is', later);
        } finally {
          await vscode.window.showTextDocument(main);
          await vscode.commands.executeCommand('workbench.action.files.revert');
        }
      },
    ],
    [
      'diagnostics of a file no editor shows: not served (TypeScript checks only open files)',
      async () => {
        const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === math.toString());
        if (tabs.length) await vscode.window.tabGroups.close(tabs);
        const a = await req('qwen/diagnostics', { uri: math.toString() });
        check(a.served === false && /only while it is open in an editor/.test(a.reason), 'not served, saying why', a);
        // Shown in an editor, the same file is answered (no errors in it).
        await vscode.window.showTextDocument(math, { preview: false });
        const b = await req('qwen/diagnostics', { uri: math.toString() });
        check(b.served === true && b.result[0].diagnostics.length === 0, 'served, empty', b);
        await vscode.window.showTextDocument(main);
      },
    ],
    [
      'served: false for a file no extension covers (Go in this VS Code)',
      async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsphost-'));
        const file = path.join(dir, 'main.go');
        fs.writeFileSync(file, 'package main\n\nfunc main() { helper() }\n\nfunc helper() {}\n');
        const uri = vscode.Uri.file(file);
        const a = await req('textDocument/definition', { textDocument: { uri: uri.toString() }, position: { line: 2, character: 15 } });
        check(a.served === false && /go files/.test(a.reason), 'not served, saying why', a);
        const d = await req('qwen/diagnostics', { uri: uri.toString() });
        check(d.served === false, 'no diagnostics either', d);
        const s = await req('textDocument/documentSymbol', { textDocument: { uri: uri.toString() } });
        check(s.served === false, 'nor symbols', s);
      },
    ],
    [
      'cancellation: a cancelled request answers RequestCancelled, a waiting one too',
      async () => {
        const src = new vscode.CancellationTokenSource();
        src.cancel();
        const a = await req('textDocument/definition', addCall, src.token);
        check(a?.code === -32800, 'RequestCancelled', a);
        const waiting = new vscode.CancellationTokenSource();
        const doc = await vscode.workspace.openTextDocument(main);
        const p = req('qwen/diagnostics', { uri: main.toString(), version: doc.version + 1000, timeoutMs: 30000 }, waiting.token);
        await sleep(200);
        check(lsp.diagnostics.pending === 1, 'the wait is open', lsp.diagnostics.pending);
        waiting.cancel();
        const b = await p;
        check(b?.code === -32800, 'the wait ended cancelled', b);
        check(lsp.diagnostics.pending === 0, 'no wait left', lsp.diagnostics.pending);
      },
    ],
    [
      'an unknown method is not served; bad params are an error',
      async () => {
        const a = await req('textDocument/typeDefinition', addCall);
        check(a.served === false && /typeDefinition/.test(a.reason), 'not served, naming it', a);
        const b = await req('textDocument/definition', { textDocument: { uri: main.toString() } });
        check(b?.code === -32602, 'InvalidParams without a position', b);
      },
    ],
  ];

  for (const [name, fn] of cases) {
    const t0 = Date.now();
    try {
      await fn();
      results.push({ name, ok: true, ms: Date.now() - t0 });
    } catch (e) {
      results.push({ name, ok: false, error: e instanceof Error ? (e instanceof Failure ? e.message : e.stack ?? e.message) : String(e), ms: Date.now() - t0 });
    }
    write();
  }
  fs.renameSync(out + '.tmp', out);
}

export function deactivate(): void {}
