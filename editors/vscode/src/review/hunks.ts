// The review of one qwen/proposeEdit, without VS Code: the hunks the server
// sent, what the user decided for each, the text that results, and where
// each hunk is drawn. Everything here is plain data so that it can be unit
// tested with node alone.
//
// Positions are LSP positions in UTF-16 code units, which is what
// vscode-languageclient negotiates and what JavaScript strings index by.

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface TextEdit {
  range: Range;
  newText: string;
}

export type HunkState = 'pending' | 'kept' | 'undone';

export interface Hunk {
  /** Index in the proposal's edits. */
  readonly index: number;
  /** Offsets in the proposal's oldText that the hunk replaces. */
  readonly start: number;
  readonly end: number;
  /** The lines the hunk removes (may be empty for an insertion). */
  readonly removed: string;
  /** The lines the hunk adds (may be empty for a deletion). */
  readonly added: string;
  /** First line of the hunk in oldText. */
  readonly startLine: number;
  /** Number of lines of oldText the hunk replaces (0 for an insertion). */
  readonly removedLines: number;
  /** First line of the hunk in the live document: moves as the user types above it. */
  line: number;
  state: HunkState;
  /** The person's reason for undoing this hunk ("Undo with reason…"), sent as hunkFeedback. */
  feedback?: string;
}

/** Offsets where each line of text starts. Lines end at \n, \r\n or a lone \r (LSP). */
export function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 13 /* \r */) {
      if (text.charCodeAt(i + 1) === 10) i++;
      starts.push(i + 1);
    } else if (c === 10 /* \n */) {
      starts.push(i + 1);
    }
  }
  return starts;
}

/** Length of line n without its line break. */
function lineLength(text: string, starts: number[], n: number): number {
  const begin = starts[n];
  let end = n + 1 < starts.length ? starts[n + 1] : text.length;
  if (end > begin && text.charCodeAt(end - 1) === 10) end--;
  if (end > begin && text.charCodeAt(end - 1) === 13) end--;
  return end - begin;
}

/** The offset of pos in text; throws when pos is outside the text. */
export function offsetAt(text: string, starts: number[], pos: Position): number {
  if (!Number.isInteger(pos.line) || !Number.isInteger(pos.character) || pos.line < 0 || pos.character < 0) {
    throw new Error(`invalid position ${JSON.stringify(pos)}`);
  }
  if (pos.line >= starts.length) {
    throw new Error(`line ${pos.line} is past the end of the text (${starts.length} lines)`);
  }
  if (pos.character > lineLength(text, starts, pos.line)) {
    throw new Error(`character ${pos.character} is past the end of line ${pos.line}`);
  }
  return starts[pos.line] + pos.character;
}

function countLines(s: string): number {
  // Number of line breaks: the hunks are whole lines, so a hunk's text
  // ends with a break unless it runs to the end of a text without one.
  const n = lineStarts(s).length - 1;
  const last = s.length > 0 ? s.charCodeAt(s.length - 1) : 10;
  return last === 10 || last === 13 ? n : n + 1;
}

/**
 * Builds the hunks of a proposal from the server's edits, checking that they
 * are sorted, do not overlap and lie inside oldText.
 */
export function buildHunks(oldText: string, edits: readonly TextEdit[]): Hunk[] {
  const starts = lineStarts(oldText);
  const hunks: Hunk[] = [];
  let prevEnd = -1;
  edits.forEach((e, index) => {
    const start = offsetAt(oldText, starts, e.range.start);
    const end = offsetAt(oldText, starts, e.range.end);
    if (end < start) throw new Error(`edit ${index} ends before it starts`);
    if (start < prevEnd) {
      throw new Error(`edit ${index} overlaps the one before it`);
    }
    prevEnd = end;
    const removed = oldText.slice(start, end);
    hunks.push({
      index,
      start,
      end,
      removed,
      added: e.newText,
      startLine: e.range.start.line,
      removedLines: removed === '' ? 0 : countLines(removed),
      line: e.range.start.line,
      state: 'pending',
    });
  });
  return hunks;
}

/** oldText with the kept hunks applied and the others left as they were (the diff editor's text). */
export function assembleText(oldText: string, hunks: readonly Hunk[]): string {
  let out = '';
  let at = 0;
  for (const h of hunks) {
    out += oldText.slice(at, h.start);
    out += h.state === 'kept' ? h.added : h.removed;
    at = h.end;
  }
  return out + oldText.slice(at);
}

export function allDecided(hunks: readonly Hunk[]): boolean {
  return hunks.every((h) => h.state !== 'pending');
}

/** The answer to qwen/proposeEdit: the kept hunks' indices (the server builds the decision), or an edited proposal's text. */
export interface ReviewAnswer {
  outcome?: 'accepted' | 'rejected';
  keptHunks?: number[];
  /** The reasons given for undone hunks, by index into the proposal's edits. */
  hunkFeedback?: { hunk: number; feedback: string }[];
  finalText?: string;
}

/** The answer once every hunk is decided: the indices of the kept ones, and the reasons given for undone ones. */
export function answerFor(hunks: readonly Hunk[]): ReviewAnswer {
  if (!allDecided(hunks)) throw new Error('the review is not decided yet');
  const a: ReviewAnswer = { keptHunks: hunks.filter((h) => h.state === 'kept').map((h) => h.index) };
  const reasons = hunks
    .filter((h) => h.state === 'undone' && h.feedback !== undefined && h.feedback.trim() !== '')
    .map((h) => ({ hunk: h.index, feedback: h.feedback!.trim() }));
  if (reasons.length > 0) a.hunkFeedback = reasons;
  return a;
}

/** The answer for a proposal the user edited in the diff editor. */
export function answerForEditedText(oldText: string, newText: string, edited: string): ReviewAnswer {
  if (edited === oldText) return { outcome: 'rejected' };
  if (edited === newText) return { outcome: 'accepted' };
  return { outcome: 'accepted', finalText: edited };
}

/** Where a hunk is drawn in the live document. */
export interface HunkDecoration {
  /** Whole lines [startLine, endLine] (inclusive) of removed text, or null for an insertion. */
  removed: { startLine: number; endLine: number } | null;
  /** The added lines, without their line breaks. */
  added: string[];
  /** Where the added text is shown: after the end of a line, or before the start of one. */
  anchor: { line: number; side: 'after' | 'before' };
  /** The line that carries the hunk's CodeLens. */
  lensLine: number;
}

export function splitLines(s: string): string[] {
  if (s === '') return [];
  const lines = s.split(/\r\n|\r|\n/);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * Maps a hunk to what the editor shows for it. lineCount is the number of
 * lines of the live document (an insertion at the end of the text is shown
 * after its last line).
 */
export function decorationFor(h: Hunk, lineCount: number): HunkDecoration {
  const added = splitLines(h.added);
  const lastLine = Math.max(0, lineCount - 1);
  if (h.removedLines > 0) {
    const endLine = Math.min(h.line + h.removedLines - 1, lastLine);
    return {
      removed: { startLine: Math.min(h.line, lastLine), endLine },
      added,
      anchor: { line: endLine, side: 'after' },
      lensLine: Math.min(h.line, lastLine),
    };
  }
  if (h.line > lastLine) {
    // The document shrank under the hunk: show it after the last line.
    return { removed: null, added, anchor: { line: lastLine, side: 'after' }, lensLine: lastLine };
  }
  return { removed: null, added, anchor: { line: h.line, side: 'before' }, lensLine: h.line };
}

/** The added text of a hunk as one line, for an inline decoration. */
export function inlinePreview(added: readonly string[], max = 160): string {
  if (added.length === 0) return '';
  let s = added.map((l) => l.replace(/\t/g, '  ')).join(' ⏎ ');
  if (s.length > max) s = s.slice(0, max - 1) + '…';
  return s;
}

/**
 * Moves the hunks after a change of the live document: a change that ends
 * above a hunk shifts it by the number of lines it added or removed.
 * A change inside a hunk leaves the hunk where it is (the server rebases the
 * decision onto the text it finds, or reports the conflict).
 */
export function shiftHunks(
  hunks: Hunk[],
  change: { startLine: number; endLine: number; insertedLines: number },
): void {
  const delta = change.insertedLines - (change.endLine - change.startLine);
  if (delta === 0) return;
  for (const h of hunks) {
    if (change.endLine < h.line) h.line += delta;
  }
}
