// The pure parts of answering qwen/lsp (src/lsp/answer.ts). The handler
// itself runs against real VS Code in e2e/lsphost (node e2e/run.mjs --only
// 'qwen/lsp handler').
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { coveringExtensions, DiagnosticVersions, kindMatches, markdownOf, mergeHovers, notCovered, withoutDeclarations } from '../lsp/answer';

// Manifests as code-server ships them (trimmed to what counts).
const exts = [
  { id: 'vscode.typescript-language-features', packageJSON: { main: './dist/extension', activationEvents: ['onLanguage:javascript', 'onLanguage:typescript', 'onCommand:typescript.reloadProjects'] } },
  { id: 'vscode.typescript', packageJSON: { contributes: { languages: [{ id: 'typescript' }], grammars: [{ language: 'typescript' }] } } },
  { id: 'vscode.go', packageJSON: { contributes: { languages: [{ id: 'go' }] } } },
  { id: 'vscode.json-language-features', packageJSON: { main: './client/dist/node/jsonClientMain', activationEvents: ['onLanguage:json', 'onLanguage:jsonc'] } },
  { id: 'vscode.git', packageJSON: { main: './dist/main', activationEvents: ['*'] } },
  { id: 'acme.zig', packageJSON: { browser: './web.js', contributes: { languages: [{ id: 'zig', extensions: ['.zig'] }] } } },
  { id: 'qwen-ls.qwen-ls', packageJSON: { main: './dist/extension.js', activationEvents: ['onStartupFinished', 'onLanguage:typescript'] } },
  { id: 'broken.one', packageJSON: null },
];

test('an extension with code that activates on or contributes the language covers it; grammars and qwen-ls do not', () => {
  assert.deepEqual(coveringExtensions(exts, 'typescript', 'qwen-ls.qwen-ls'), ['vscode.typescript-language-features']);
  assert.deepEqual(coveringExtensions(exts, 'go', 'qwen-ls.qwen-ls'), []);
  assert.deepEqual(coveringExtensions(exts, 'jsonc', 'qwen-ls.qwen-ls'), ['vscode.json-language-features']);
  // Implicit activation: contributing the language is enough for an extension with code.
  assert.deepEqual(coveringExtensions(exts, 'zig', 'qwen-ls.qwen-ls'), ['acme.zig']);
  // Whatever runs on startup ("*") covers no language in particular.
  assert.deepEqual(coveringExtensions(exts, 'plaintext', 'Qwen-LS.qwen-ls'), []);
  assert.match(notCovered('go'), /no extension in VS Code provides language features for go files/);
});

test('hovers of several providers become one markdown hover with the first range', () => {
  const r = { start: { line: 1, character: 2 }, end: { line: 1, character: 5 } };
  assert.equal(mergeHovers([]), null);
  assert.equal(mergeHovers([{ contents: ['', { value: '  ' }] }]), null);
  assert.deepEqual(mergeHovers([{ contents: [{ language: 'typescript', value: 'function add(a: number): number' }, { value: 'Adds.' }], range: r }, { contents: ['from lint'] }]), {
    contents: { kind: 'markdown', value: '```typescript\nfunction add(a: number): number\n```\n\nAdds.\n\n---\n\nfrom lint' },
    range: r,
  });
  assert.equal(markdownOf('plain'), 'plain');
});

test('includeDeclaration: false drops the references that are a definition', () => {
  const at = (uri: string, line: number) => ({ uri, range: { start: { line, character: 9 }, end: { line, character: 12 } } });
  const refs = [at('file:///w/a.ts', 0), at('file:///w/b.ts', 3), at('file:///w/b.ts', 7)];
  assert.deepEqual(withoutDeclarations(refs, [at('file:///w/a.ts', 0)]), refs.slice(1));
  assert.deepEqual(withoutDeclarations(refs, []), refs);
});

test('code action kinds match LSP-style: a parent kind covers its children', () => {
  assert.ok(kindMatches('refactor.extract.function', ['refactor']));
  assert.ok(kindMatches('quickfix', ['quickfix', 'source']));
  assert.ok(!kindMatches('refactorx', ['refactor']));
  assert.ok(!kindMatches(undefined, ['quickfix']));
  assert.ok(kindMatches(undefined, undefined));
  assert.ok(kindMatches('source.organizeImports', []));
});

test('a wait for diagnostics ends at the version, at once when seen, or at the timeout', async () => {
  const d = new DiagnosticVersions();
  d.record('file:///w/a.ts', 3);
  assert.equal(await d.waitFor('file:///w/a.ts', 2, 10000), true);
  const later = d.waitFor('file:///w/a.ts', 5, 10000);
  d.record('file:///w/a.ts', 4); // a change at an older version does not end it
  d.record('file:///w/b.ts', 9); // nor one of another document
  assert.equal(d.pending, 1);
  d.record('file:///w/a.ts', 5);
  assert.equal(await later, true);
  assert.equal(await d.waitFor('file:///w/a.ts', 6, 0), false);
  // Versions only grow; a closed document starts again.
  d.record('file:///w/a.ts', 1);
  assert.equal(d.get('file:///w/a.ts'), 5);
  d.forget('file:///w/a.ts');
  assert.equal(d.get('file:///w/a.ts'), undefined);
  // Cancelled: ends without the version.
  let cancel: () => void = () => undefined;
  const c = d.waitFor('file:///w/a.ts', 1, 10000, (fn) => (cancel = fn));
  cancel();
  assert.equal(await c, false);
  assert.equal(d.pending, 0);
});
