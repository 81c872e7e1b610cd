// The rows of the session list (Qwen: Open Session…): the title, when the
// session was last used, and its folder only when it is not this
// workspace's. No vscode import: unit-tested under node.
import * as path from 'path';

/** One entry of qwen/listSessions. */
export interface SessionEntry {
  sessionId: string;
  cwd: string;
  title: string;
  updatedAt: string;
}

function sameDay(a: Date, b: Date): boolean {
  return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();
}

/**
 * When a session was last used, as a person reads it: "just now", "5 min
 * ago" within the hour, then the clock time, "today 14:05", "yesterday
 * 14:05", the weekday within the week ("Mon 14:05"), else the date with
 * the time. Local time; now and the result of Date.parse are in ms.
 */
export function sessionTime(iso: string, now: number, locale?: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.round((now - t) / 1000);
  if (s < 45 && s > -60) return 'just now';
  const m = Math.round(s / 60);
  if (m >= 1 && m < 60) return `${m} min ago`;
  const d = new Date(t);
  const today = new Date(now);
  const clock = d.toLocaleTimeString(locale, { hour: '2-digit', minute: '2-digit' });
  if (sameDay(d, today)) return `today ${clock}`;
  const yesterday = new Date(now);
  yesterday.setDate(yesterday.getDate() - 1);
  if (sameDay(d, yesterday)) return `yesterday ${clock}`;
  if (t < now && now - t < 6 * 24 * 3600 * 1000) return `${d.toLocaleDateString(locale, { weekday: 'short' })} ${clock}`;
  return `${d.toLocaleDateString(locale, { year: 'numeric', month: 'short', day: 'numeric' })}, ${clock}`;
}

/** Whether two folder paths name the same folder (a trailing separator aside; case-blind on Windows). */
function samePath(a: string, b: string, platform: string): boolean {
  const api = platform === 'win32' ? path.win32 : path.posix;
  const norm = (p: string) => {
    const n = api.normalize(p).replace(/[\\/]+$/, '');
    return platform === 'win32' ? n.toLowerCase() : n;
  };
  return norm(a) === norm(b);
}

/**
 * The QuickPick row of a session: the title as the label, the time (and
 * "current") as the description, and the folder as the detail only when
 * it is none of the workspace's folders.
 */
export function sessionItem(
  s: SessionEntry,
  opts: { currentId?: string; roots: string[]; now: number; locale?: string; platform?: string },
): { label: string; description: string; detail?: string; sessionId: string } {
  const time = sessionTime(s.updatedAt, opts.now, opts.locale);
  const current = s.sessionId === opts.currentId;
  const description = [time, current ? 'current' : ''].filter((x) => x !== '').join(' · ');
  const platform = opts.platform ?? process.platform;
  const elsewhere = s.cwd !== '' && !opts.roots.some((r) => samePath(r, s.cwd, platform));
  return {
    label: s.title || '(untitled)',
    description,
    ...(elsewhere ? { detail: `in ${s.cwd}` } : {}),
    sessionId: s.sessionId,
  };
}
