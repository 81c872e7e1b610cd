// Where the qwen-ls binary comes from: the qwen.serverPath setting, then
// `qwen-ls` on PATH, then the binary bundled in a platform-specific .vsix.
import * as fs from 'fs';
import * as path from 'path';

export interface ServerPathSource {
  path: string;
  from: 'setting' | 'PATH' | 'bundled';
}

export function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

export function resolveServerPath(
  setting: string,
  envPath: string | undefined,
  extensionPath: string,
  platform: NodeJS.Platform = process.platform,
  executable: (p: string) => boolean = isExecutable,
): ServerPathSource | { error: string } {
  const exe = platform === 'win32' ? 'qwen-ls.exe' : 'qwen-ls';
  const s = setting.trim();
  if (s !== '') {
    if (executable(s)) return { path: s, from: 'setting' };
    return { error: `qwen.serverPath is set to ${s}, which is not an executable file. Fix the setting or clear it to use the bundled server.` };
  }
  for (const dir of (envPath ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const p = path.join(dir, exe);
    if (executable(p)) return { path: p, from: 'PATH' };
  }
  const bundled = path.join(extensionPath, 'bin', exe);
  if (executable(bundled)) return { path: bundled, from: 'bundled' };
  return {
    error:
      'qwen-ls was not found: set qwen.serverPath, put qwen-ls on PATH (go install ./cmd/qwen-ls), or install the platform-specific .vsix that bundles it.',
  };
}
