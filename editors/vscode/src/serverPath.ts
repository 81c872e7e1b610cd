// Where the qwen-ls binary comes from: the qwen.serverPath setting, then the
// binary bundled in the platform-specific .vsix for this machine
// (bin/<platform>-<arch>/qwen-ls, qwen-ls.exe on Windows), then `qwen-ls`
// on PATH. The bundled one comes before PATH: it is the build the extension
// was packaged and tested with, and an older qwen-ls left on PATH (a `go
// install` from months ago) must not shadow it. Whoever wants another build
// names it in qwen.serverPath.
import * as fs from 'fs';
import * as path from 'path';

export interface ServerPathSource {
  path: string;
  from: 'setting' | 'PATH' | 'bundled';
}

/** The VS Code target of a platform and architecture, as `vsce package --target` names it. */
export function targetOf(platform: string, arch: string): string {
  return `${platform}-${arch}`;
}

/** The six targets a .vsix is built for (scripts/package.sh). */
export const vsixTargets = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64', 'win32-arm64'];

/**
 * A file the platform can start: on Windows any regular file (it has no
 * execute bit; the name carries .exe), elsewhere a regular file with an
 * execute permission for this process.
 */
export function isExecutable(p: string, platform: NodeJS.Platform = process.platform): boolean {
  try {
    if (!fs.statSync(p).isFile()) return false;
    if (platform !== 'win32') fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The targets whose binary this extension folder bundles (the folders under bin/). */
export function bundledTargets(extensionPath: string): string[] {
  try {
    return fs
      .readdirSync(path.join(extensionPath, 'bin'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
  } catch {
    return [];
  }
}

export interface ResolveOptions {
  platform?: NodeJS.Platform;
  arch?: string;
  /** Whether a path can be started; defaults to isExecutable for the platform. */
  executable?: (p: string) => boolean;
  /** Path operations of the platform (path.win32 for Windows); defaults to the one for `platform`. */
  pathApi?: path.PlatformPath;
}

export function resolveServerPath(
  setting: string,
  envPath: string | undefined,
  extensionPath: string,
  opts: ResolveOptions = {},
): ServerPathSource | { error: string } {
  const platform = opts.platform ?? process.platform;
  const arch = opts.arch ?? process.arch;
  const p = opts.pathApi ?? (platform === 'win32' ? path.win32 : path.posix);
  const executable = opts.executable ?? ((f: string) => isExecutable(f, platform));
  const exe = platform === 'win32' ? 'qwen-ls.exe' : 'qwen-ls';
  const target = targetOf(platform, arch);

  const s = setting.trim();
  if (s !== '') {
    if (executable(s)) return { path: s, from: 'setting' };
    // On Windows a path written without its .exe still names the program.
    if (platform === 'win32' && !/\.exe$/i.test(s) && executable(`${s}.exe`)) return { path: `${s}.exe`, from: 'setting' };
    return { error: `qwen.serverPath is set to ${s}, which is not an executable file. Fix the setting or clear it to use the bundled server.` };
  }

  const bundled = p.join(extensionPath, 'bin', target, exe);
  if (executable(bundled)) return { path: bundled, from: 'bundled' };

  for (const dir of (envPath ?? '').split(p.delimiter)) {
    if (dir === '') continue;
    const f = p.join(dir, exe);
    if (executable(f)) return { path: f, from: 'PATH' };
  }

  const others = bundledTargets(extensionPath).filter((t) => t !== target);
  if (others.length > 0) {
    return {
      error:
        `this Qwen extension bundles qwen-ls for ${others.join(', ')}, but VS Code runs on ${target}: ` +
        `install the .vsix built for ${target} (qwen-ls-${target}-<version>.vsix), or set qwen.serverPath to a qwen-ls built for this machine.`,
    };
  }
  return {
    error:
      `qwen-ls was not found: set qwen.serverPath, install the .vsix built for ${target} (it bundles qwen-ls), ` +
      'or put qwen-ls on PATH (go install github.com/qwen-ls/qwen-ls/cmd/qwen-ls@latest).',
  };
}
