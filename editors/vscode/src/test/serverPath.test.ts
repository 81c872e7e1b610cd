// Which qwen-ls the extension starts, on a real extension folder laid out
// as scripts/package.sh lays out a .vsix. The platform and architecture are
// values, so every target's choice is tested on this machine.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { resolveServerPath, targetOf, vsixTargets } from '../serverPath';

/** A temp folder holding the given files (an executable binary each), removed after the test. */
function folder(t: { after: (fn: () => void) => void }, files: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qwen-serverpath-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const f of files) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), '#!/bin/sh\n', { mode: 0o755 });
  }
  return dir;
}

const exeOf = (target: string) => (target.startsWith('win32-') ? 'qwen-ls.exe' : 'qwen-ls');

test('each .vsix target starts the binary bundled for it, and the setting still wins', (t) => {
  for (const target of vsixTargets) {
    const [platform, arch] = target.split('-') as [NodeJS.Platform, string];
    assert.equal(targetOf(platform, arch), target);
    const ext = folder(t, [`bin/${target}/${exeOf(target)}`]);
    const user = folder(t, [`tools/${exeOf(target)}`]);
    const onPath = folder(t, [exeOf(target)]);
    const opts = { platform, arch, pathApi: path.posix };
    const bundled = path.join(ext, 'bin', target, exeOf(target));
    assert.deepEqual(resolveServerPath('', onPath, ext, opts), { path: bundled, from: 'bundled' }, target);
    const mine = path.join(user, 'tools', exeOf(target));
    assert.deepEqual(resolveServerPath(`  ${mine} `, onPath, ext, opts), { path: mine, from: 'setting' }, target);
  }
});

test('without a bundled binary, qwen-ls on PATH; a missing one names qwen.serverPath', (t) => {
  const ext = folder(t, []);
  const bin = folder(t, ['qwen-ls']);
  const opts = { platform: 'linux' as const, arch: 'x64', pathApi: path.posix };
  assert.deepEqual(resolveServerPath('', `/nonexistent${path.posix.delimiter}${bin}`, ext, opts), { path: path.join(bin, 'qwen-ls'), from: 'PATH' });
  const none = resolveServerPath('', '', ext, opts);
  assert.ok('error' in none && /not found/.test(none.error) && /qwen\.serverPath/.test(none.error), JSON.stringify(none));
  const missing = resolveServerPath(path.join(ext, 'missing', 'qwen-ls'), bin, ext, opts);
  assert.ok('error' in missing && /^qwen\.serverPath is set to /.test(missing.error), JSON.stringify(missing));
});

test('a .vsix for another machine says which one to install and names qwen.serverPath', (t) => {
  const ext = folder(t, ['bin/linux-x64/qwen-ls']);
  const r = resolveServerPath('', '', ext, { platform: 'darwin', arch: 'arm64', pathApi: path.posix });
  assert.ok('error' in r, JSON.stringify(r));
  assert.match(r.error, /bundles qwen-ls for linux-x64, but VS Code runs on darwin-arm64/);
  assert.match(r.error, /qwen-ls-darwin-arm64-<version>\.vsix/);
  assert.match(r.error, /qwen\.serverPath/);
  // A qwen-ls on PATH serves when the bundled one cannot.
  const bin = folder(t, ['qwen-ls']);
  assert.deepEqual(resolveServerPath('', bin, ext, { platform: 'darwin', arch: 'arm64', pathApi: path.posix }), { path: path.join(bin, 'qwen-ls'), from: 'PATH' });
});

test('Windows: qwen-ls.exe, no execute bit needed, and a serverPath without .exe', (t) => {
  const ext = folder(t, []);
  const user = folder(t, ['qwen-ls.exe']);
  fs.chmodSync(path.join(user, 'qwen-ls.exe'), 0o644); // Windows has no execute bit
  const opts = { platform: 'win32' as const, arch: 'x64', pathApi: path.posix };
  assert.deepEqual(resolveServerPath('', user, ext, opts), { path: path.join(user, 'qwen-ls.exe'), from: 'PATH' });
  assert.deepEqual(resolveServerPath(path.join(user, 'qwen-ls'), '', ext, opts), { path: path.join(user, 'qwen-ls.exe'), from: 'setting' });
  // The same file is not executable for a Unix flavour.
  const unix = { platform: 'linux' as const, arch: 'x64', pathApi: path.posix };
  fs.renameSync(path.join(user, 'qwen-ls.exe'), path.join(user, 'qwen-ls'));
  assert.ok('error' in resolveServerPath('', user, ext, unix));
});

test('Windows paths: PATH is split at ; and joined with \\', () => {
  const seen: string[] = [];
  const r = resolveServerPath('', 'C:\\Go\\bin;C:\\Users\\me\\go\\bin', 'C:\\Users\\me\\.vscode\\extensions\\qwen-ls', {
    platform: 'win32',
    arch: 'arm64',
    executable: (p) => {
      seen.push(p);
      return p === 'C:\\Users\\me\\go\\bin\\qwen-ls.exe';
    },
  });
  assert.deepEqual(r, { path: 'C:\\Users\\me\\go\\bin\\qwen-ls.exe', from: 'PATH' });
  assert.deepEqual(seen, [
    'C:\\Users\\me\\.vscode\\extensions\\qwen-ls\\bin\\win32-arm64\\qwen-ls.exe',
    'C:\\Go\\bin\\qwen-ls.exe',
    'C:\\Users\\me\\go\\bin\\qwen-ls.exe',
  ]);
});
