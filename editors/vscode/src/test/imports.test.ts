// No import cycles among the extension's own modules (issue 30, item 6).
// A cycle means neither module can be read, tested or loaded without the
// other; type-only imports count too, since they tie the two files
// together just the same. The imports are read with the TypeScript
// scanner (typescript is already a dev dependency), so comments and
// strings are not mistaken for imports.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/** The module specifiers a file imports or re-exports, type-only ones included. */
function importsOf(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}

/** The .ts file a relative specifier names, or undefined (a package, or not found). */
function resolve(from: string, spec: string, files: Set<string>): string | undefined {
  if (!spec.startsWith('./') && !spec.startsWith('../')) return undefined;
  const base = path.join(path.dirname(from), spec);
  for (const c of [base, base + '.ts', path.join(base, 'index.ts')]) {
    if (files.has(c)) return c;
  }
  return undefined;
}

/** Every .ts file below dir, as paths relative to it with '/' separators. */
function tsFiles(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const p = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) out.push(...tsFiles(dir, p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out.sort();
}

/** The import graph of the .ts files below dir: file → the files it imports. */
function importGraph(dir: string): Map<string, string[]> {
  const files = tsFiles(dir);
  const set = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const deps = importsOf(fs.readFileSync(path.join(dir, f), 'utf8'))
      .map((spec) => resolve(f, spec, set))
      .filter((d): d is string => d !== undefined)
      .map((d) => d.split(path.sep).join('/'));
    graph.set(f, [...new Set(deps)].sort());
  }
  return graph;
}

/** The cycles of graph, each as its files in import order, first file repeated at the end. */
function cycles(graph: Map<string, string[]>): string[][] {
  const found = new Map<string, string[]>();
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): void => {
    state.set(n, 'open');
    stack.push(n);
    for (const d of graph.get(n) ?? []) {
      if (state.get(d) === 'open') {
        const cycle = stack.slice(stack.indexOf(d));
        // One entry per cycle, whichever file the search entered it by.
        const start = cycle.indexOf([...cycle].sort()[0]);
        const canon = [...cycle.slice(start), ...cycle.slice(0, start)];
        found.set(canon.join(' → '), [...canon, canon[0]]);
      } else if (!state.has(d)) {
        visit(d);
      }
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of graph.keys()) if (!state.has(n)) visit(n);
  return [...found.values()];
}

test('the import reader sees type-only imports and re-exports, not comments', () => {
  const src = [
    "import type { A } from './a';",
    "import { B } from './b';",
    "export { C } from './c';",
    "import * as vscode from 'vscode';",
    "// import { D } from './d';",
    "const s = \"import { E } from './e'\";",
  ].join('\n');
  assert.deepEqual(importsOf(src).sort(), ['./a', './b', './c', 'vscode']);
});

test('the cycle finder finds a cycle and only that', () => {
  const g = new Map<string, string[]>([
    ['agent.ts', ['extension.ts', 'settings.ts']],
    ['extension.ts', ['agent.ts', 'settings.ts']],
    ['settings.ts', []],
    ['chat/view.ts', ['chat/protocol.ts']],
    ['chat/protocol.ts', ['chat/commands.ts']],
    ['chat/commands.ts', ['chat/view.ts']],
  ]);
  assert.deepEqual(cycles(g), [
    ['agent.ts', 'extension.ts', 'agent.ts'],
    ['chat/commands.ts', 'chat/view.ts', 'chat/protocol.ts', 'chat/commands.ts'],
  ]);
  g.set('extension.ts', ['settings.ts']);
  g.set('chat/commands.ts', []);
  assert.deepEqual(cycles(g), []);
});

test('no import cycle among the modules of src', () => {
  // out/test/imports.test.js → src
  const src = path.join(__dirname, '..', '..', 'src');
  const graph = importGraph(src);
  assert.ok(graph.has('extension.ts') && graph.has('agent.ts'), `read the wrong folder: ${src}`);
  assert.ok((graph.get('extension.ts') ?? []).includes('agent.ts'), 'the graph misses extension.ts → agent.ts');
  const found = cycles(graph).map((c) => c.join(' → '));
  assert.deepEqual(found, [], `import cycles in src:\n  ${found.join('\n  ')}`);
});
