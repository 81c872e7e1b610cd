// Inline review of qwen/proposeEdit (protocol.md §6.2). Focus belongs to the
// person: a proposal never opens an editor by itself. It is announced (a
// notification with a Review button, the status bar, a badge on the file,
// a "Review" action in the chat), and the file opens beside, with focus,
// only when the person asks. Wherever the file is visible, each hunk is
// decorated (removed lines highlighted, added text inline), with CodeLenses
// "Keep | Undo" per hunk and "Keep all | Undo all" at the top, and a diff
// editor on request where the proposal can be edited. The request is
// answered once every hunk is decided; closing the file or the diff after
// opening it through Review rejects. Nothing here writes the document: the server applies
// the decision with workspace/applyEdit, so one Ctrl+Z undoes it.
import * as vscode from 'vscode';
import * as path from 'path';
import {
  allDecided,
  answerFor,
  answerForEditedText,
  assembleText,
  buildHunks,
  decorationFor,
  Hunk,
  HunkState,
  inlinePreview,
  ReviewAnswer,
  shiftHunks,
  TextEdit,
} from './hunks';

export interface ProposeEditParams {
  sessionId: string;
  toolCallId: string;
  title: string;
  uri: string;
  version: number | null;
  isNewFile: boolean;
  oldText: string;
  newText: string;
  edits: TextEdit[];
}

export interface ProposeEditResult {
  /** Absent when keptHunks (indices into edits) carries the decision. */
  outcome?: 'accepted' | 'rejected' | 'cancelled';
  keptHunks?: number[];
  /** The reasons given for undone hunks (index into edits, reason). */
  hunkFeedback?: { hunk: number; feedback: string }[];
  finalText?: string;
  feedback?: string;
  always?: boolean;
}

/** A review waiting for the person, as the chat and the status bar show it. */
export interface PendingReview {
  uri: string;
  name: string;
  /** Hunks still undecided. */
  hunks: number;
  isNewFile: boolean;
}

const proposalScheme = 'qwen-proposal';
/** The left side of a new file's diff. */
const emptyUri = vscode.Uri.from({ scheme: proposalScheme, path: '/empty' });

/** In-memory files for the right side of the diff editor, so the user can edit the proposal. */
class ProposalFs implements vscode.FileSystemProvider {
  private readonly files = new Map<string, Uint8Array>();
  private readonly emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.emitter.event;
  set(uri: vscode.Uri, text: string): void {
    this.files.set(uri.path, new TextEncoder().encode(text));
  }
  delete(uri: vscode.Uri): void {
    this.files.delete(uri.path);
  }
  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }
  stat(uri: vscode.Uri): vscode.FileStat {
    const f = this.files.get(uri.path);
    if (!f) throw vscode.FileSystemError.FileNotFound(uri);
    return { type: vscode.FileType.File, ctime: 0, mtime: Date.now(), size: f.byteLength };
  }
  readDirectory(): [string, vscode.FileType][] {
    return [];
  }
  createDirectory(): void {}
  readFile(uri: vscode.Uri): Uint8Array {
    const f = this.files.get(uri.path);
    if (!f) throw vscode.FileSystemError.FileNotFound(uri);
    return f;
  }
  writeFile(uri: vscode.Uri, content: Uint8Array): void {
    if (!this.files.has(uri.path)) throw vscode.FileSystemError.NoPermissions('only a proposal under review can be saved here');
    this.files.set(uri.path, content);
    this.emitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }
  rename(): void {
    throw vscode.FileSystemError.NoPermissions('a proposal cannot be renamed');
  }
}

class Review {
  readonly hunks: Hunk[];
  readonly uri: vscode.Uri;
  diffUri: vscode.Uri | undefined;
  private settle!: (r: ProposeEditResult) => void;
  readonly done: Promise<ProposeEditResult>;
  finished = false;
  /** True while the review waits for the feedback input after a rejection. */
  askingFeedback = false;
  /** True once the person opened the file or the diff through Review: closing tabs before that means nothing. */
  shown = false;

  constructor(readonly p: ProposeEditParams) {
    this.uri = vscode.Uri.parse(p.uri);
    this.hunks = buildHunks(p.oldText, p.edits);
    this.done = new Promise((resolve) => (this.settle = resolve));
  }

  finish(r: ProposeEditResult): void {
    if (this.finished) return;
    this.finished = true;
    this.settle(r);
  }
}

/** A reason as a CodeLens shows it: one line, short, with no $(icon) syntax. */
function lensText(s: string, max = 80): string {
  const one = s.replace(/\s+/g, ' ').replace(/\$\(/g, '$ (');
  return one.length > max ? one.slice(0, max - 1) + '…' : one;
}

export class ReviewController implements vscode.CodeLensProvider, vscode.FileDecorationProvider, vscode.Disposable {
  private readonly reviews = new Map<string, Review>();
  private readonly fs = new ProposalFs();
  private readonly lensEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensEmitter.event;
  private readonly decoEmitter = new vscode.EventEmitter<vscode.Uri | vscode.Uri[] | undefined>();
  readonly onDidChangeFileDecorations = this.decoEmitter.event;
  private readonly pendingEmitter = new vscode.EventEmitter<PendingReview[]>();
  /** Fires with the reviews waiting for the person whenever that list changes. */
  readonly onDidChangePending = this.pendingEmitter.event;
  private readonly removedDeco = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('diffEditor.removedLineBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.deletedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private readonly addedDeco = vscode.window.createTextEditorDecorationType({
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  /** The new text of a kept hunk, shown until the server applies the decision. */
  private readonly keptDeco = vscode.window.createTextEditorDecorationType({
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  /** The old text a kept hunk replaces. */
  private readonly struckDeco = vscode.window.createTextEditorDecorationType({
    textDecoration: 'line-through',
    opacity: '0.6',
  });
  private readonly undoneDeco = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    borderWidth: '0 0 0 2px',
    borderStyle: 'solid',
    borderColor: new vscode.ThemeColor('editorGhostText.foreground'),
  });
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly log: vscode.LogOutputChannel) {
    this.fs.set(emptyUri, '');
  }

  register(c: vscode.ExtensionContext): void {
    this.disposables.push(
      vscode.workspace.registerFileSystemProvider(proposalScheme, this.fs, { isCaseSensitive: true }),
      vscode.languages.registerCodeLensProvider([{ scheme: 'file' }, { scheme: proposalScheme }], this),
      vscode.commands.registerCommand('qwen.review.keepHunk', (uri?: string, index?: number) => this.decideCmd('kept', uri, index)),
      vscode.commands.registerCommand('qwen.review.undoHunk', (uri?: string, index?: number) => this.decideCmd('undone', uri, index)),
      vscode.commands.registerCommand('qwen.review.undoHunkWithReason', (uri?: string, index?: number) => this.undoWithReason(uri, index)),
      vscode.commands.registerCommand('qwen.review.keepAll', (uri?: string) => this.decideAll('kept', uri)),
      vscode.commands.registerCommand('qwen.review.undoAll', (uri?: string) => this.decideAll('undone', uri)),
      vscode.commands.registerCommand('qwen.review.openDiff', (uri?: string) => this.openDiff(uri)),
      vscode.commands.registerCommand('qwen.review.show', (uri?: string) => this.show(uri)),
      vscode.window.registerFileDecorationProvider(this),
      vscode.commands.registerCommand('qwen.review.acceptDiff', (uri?: vscode.Uri | string) => this.finishDiff(true, uri)),
      vscode.commands.registerCommand('qwen.review.rejectDiff', (uri?: vscode.Uri | string) => this.finishDiff(false, uri)),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateContext()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.redrawAll()),
      vscode.window.tabGroups.onDidChangeTabGroups(() => this.redrawAll()),
      vscode.workspace.onDidChangeTextDocument((e) => this.documentChanged(e)),
      vscode.window.tabGroups.onDidChangeTabs((e) => this.tabsChanged(e)),
    );
    c.subscriptions.push(this);
  }

  /** Handles one qwen/proposeEdit; resolves when the user has decided. */
  async propose(p: ProposeEditParams, token: vscode.CancellationToken): Promise<ProposeEditResult> {
    let review: Review;
    try {
      review = new Review(p);
    } catch (err) {
      this.log.error(`proposeEdit: ${err instanceof Error ? err.message : String(err)}`);
      return { outcome: 'rejected', feedback: 'The editor could not show this proposal (its edits do not fit the file).' };
    }
    const key = review.uri.toString();
    // One review per file at a time: a later one waits for the earlier.
    const earlier = this.reviews.get(key);
    if (earlier) await earlier.done;
    if (token.isCancellationRequested) return { outcome: 'cancelled' };
    this.reviews.set(key, review);
    const sub = token.onCancellationRequested(() => review.finish({ outcome: 'cancelled' }));
    // Not shown until the person opens it: closing a tab they already had
    // open decides nothing.
    review.shown = false;
    this.redrawAll();
    this.updateContext();
    this.changed();
    this.announce(review);
    const result = await review.done;
    sub.dispose();
    await this.cleanup(review);
    this.changed();
    return result;
  }

  /** The reviews waiting for a decision, oldest first. */
  pending(): PendingReview[] {
    return [...this.reviews.values()]
      .filter((r) => !r.finished)
      .map((r) => ({
        uri: r.uri.toString(),
        name: path.basename(r.uri.fsPath),
        hunks: r.hunks.filter((h) => h.state === 'pending').length,
        isNewFile: r.p.isNewFile,
      }));
  }

  private changed(): void {
    const pending = this.pending();
    void vscode.commands.executeCommand('setContext', 'qwen.reviewPending', pending.length > 0);
    this.pendingEmitter.fire(pending);
    this.decoEmitter.fire(undefined);
  }

  /**
   * Whether a review should also raise a notification: set by the extension
   * to "the chat is not visible" (a visible chat shows its own Review button,
   * and a notification cannot be taken back once the review is decided).
   */
  notifyWhen: () => boolean = () => true;

  /** Tells the person a review waits, without touching focus: a notification with a Review button. */
  private announce(review: Review): void {
    if (!this.notifyWhen()) return;
    const name = path.basename(review.uri.fsPath);
    const n = review.hunks.length;
    const what = review.p.isNewFile ? `the new file ${name}` : `${n} ${n === 1 ? 'hunk' : 'hunks'} in ${name}`;
    void vscode.window.showInformationMessage(`Qwen: review ${what}`, 'Review').then((a) => {
      if (a === 'Review') void this.show(review.uri.toString());
    });
  }

  /**
   * Opens a review because the person asked: the file in the editor area
   * beside the chat (the group that already shows it, else the active one),
   * with focus. The only place a review moves focus.
   */
  async show(uri?: string): Promise<void> {
    const review = this.reviewFor(uri) ?? [...this.reviews.values()].find((r) => !r.finished);
    if (!review || review.finished) return;
    if (review.p.isNewFile) {
      await this.openDiff(review.uri.toString());
      review.shown = true;
      return;
    }
    try {
      const doc = await vscode.workspace.openTextDocument(review.uri);
      const key = review.uri.toString();
      const group = vscode.window.tabGroups.all.find((g) => g.tabs.some((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === key));
      const editor = await vscode.window.showTextDocument(doc, {
        viewColumn: group?.viewColumn ?? vscode.ViewColumn.Active,
        preview: false,
        preserveFocus: false,
      });
      const first = review.hunks.find((h) => h.state === 'pending') ?? review.hunks[0];
      if (first) {
        const line = Math.min(first.line, doc.lineCount - 1);
        editor.selection = new vscode.Selection(line, 0, line, 0);
        editor.revealRange(new vscode.Range(line, 0, line, 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      }
      review.shown = true;
    } catch (err) {
      this.log.error(`review: cannot open ${review.uri.fsPath}: ${err instanceof Error ? err.message : String(err)}`);
      review.finish({ outcome: 'rejected', feedback: `The editor could not open ${review.uri.fsPath}.` });
    }
    this.redrawAll();
    this.updateContext();
  }

  provideFileDecoration(uri: vscode.Uri): vscode.FileDecoration | undefined {
    const review = this.reviews.get(uri.toString());
    if (!review || review.finished) return undefined;
    const n = review.hunks.filter((h) => h.state === 'pending').length;
    return {
      badge: n > 0 && n < 100 ? String(n) : 'Q',
      tooltip: `Qwen: ${n} ${n === 1 ? 'change' : 'changes'} to review`,
      color: new vscode.ThemeColor('editorInfo.foreground'),
      propagate: false,
    };
  }

  private openTabs(): Set<string> {
    const open = new Set<string>();
    for (const t of vscode.window.tabGroups.all.flatMap((g) => g.tabs)) {
      if (t.input instanceof vscode.TabInputText) open.add(t.input.uri.toString());
      if (t.input instanceof vscode.TabInputTextDiff) {
        open.add(t.input.original.toString());
        open.add(t.input.modified.toString());
      }
    }
    return open;
  }

  private async cleanup(review: Review): Promise<void> {
    const key = review.uri.toString();
    if (this.reviews.get(key) === review) this.reviews.delete(key);
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.toString() === key) this.clearDecorations(editor);
    }
    if (review.diffUri) {
      const diffKey = review.diffUri.toString();
      const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === diffKey);
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === diffKey);
      if (doc?.isDirty) await doc.save(); // into memory only; avoids a "save?" prompt on close
      if (tabs.length) await vscode.window.tabGroups.close(tabs).then(undefined, () => undefined);
      this.fs.delete(review.diffUri);
    }
    this.lensEmitter.fire();
    this.updateContext();
  }

  private reviewFor(uri?: string | vscode.Uri): Review | undefined {
    if (uri !== undefined) {
      const s = uri.toString();
      return this.reviews.get(s) ?? [...this.reviews.values()].find((r) => r.diffUri?.toString() === s);
    }
    const active = vscode.window.activeTextEditor?.document.uri.toString();
    if (active) {
      const r = this.reviews.get(active) ?? [...this.reviews.values()].find((r) => r.diffUri?.toString() === active);
      if (r) return r;
    }
    return this.reviews.size === 1 ? [...this.reviews.values()][0] : undefined;
  }

  private decideCmd(state: HunkState, uri?: string, index?: number): void {
    const review = this.reviewFor(uri);
    if (!review || review.finished) return;
    const hunk = this.hunkFor(review, index);
    if (!hunk || hunk.state !== 'pending') return;
    hunk.state = state;
    this.afterDecision(review);
  }

  /**
   * "Undo with reason…": asks for the reason in an InputBox opened only by
   * this explicit action, then undoes the hunk with it (sent as
   * hunkFeedback). Escape leaves the hunk undecided; an empty reason undoes
   * it without one.
   */
  private async undoWithReason(uri?: string, index?: number): Promise<void> {
    const review = this.reviewFor(uri);
    if (!review || review.finished) return;
    const hunk = this.hunkFor(review, index);
    if (!hunk || hunk.state !== 'pending') return;
    const line = hunk.line + 1; // where the person sees it now
    const reason = await vscode.window.showInputBox({
      title: `Qwen: undo the change at line ${line} of ${path.basename(review.uri.fsPath)}`,
      prompt: 'Tell the model why this change is undone (optional; Enter to undo without a reason, Escape to go back)',
      placeHolder: 'Reason for the model',
      ignoreFocusOut: true,
    });
    if (reason === undefined || review.finished || hunk.state !== 'pending') return;
    hunk.state = 'undone';
    const r = reason.trim();
    if (r !== '') hunk.feedback = r;
    this.afterDecision(review);
  }

  /** The hunk a command names: by index, else (from a keybinding) the pending hunk at the cursor, the next below it, or the first. */
  private hunkFor(review: Review, index?: number): Hunk | undefined {
    let hunk: Hunk | undefined;
    if (typeof index === 'number') {
      hunk = review.hunks[index];
    } else {
      // From a keybinding: the pending hunk at the cursor, else the next one below it, else the first.
      const editor = vscode.window.activeTextEditor;
      const line = editor && editor.document.uri.toString() === review.uri.toString() ? editor.selection.active.line : 0;
      const pending = review.hunks.filter((h) => h.state === 'pending');
      hunk =
        pending.find((h) => line >= h.line && line < h.line + Math.max(1, h.removedLines)) ??
        pending.find((h) => h.line >= line) ??
        pending[0];
    }
    return hunk;
  }

  private decideAll(state: HunkState, uri?: string): void {
    const review = this.reviewFor(uri);
    if (!review || review.finished) return;
    for (const h of review.hunks) if (h.state === 'pending') h.state = state;
    this.afterDecision(review);
  }

  private afterDecision(review: Review): void {
    this.redrawAll();
    this.lensEmitter.fire();
    this.changed();
    if (!allDecided(review.hunks)) return;
    void this.answer(review, answerFor(review.hunks));
  }

  private async answer(review: Review, a: ReviewAnswer): Promise<void> {
    if (review.finished || review.askingFeedback) return;
    // Every hunk undone: ask for the reason once, unless the person already gave reasons hunk by hunk.
    if ((a.outcome === 'rejected' || a.keptHunks?.length === 0) && !a.hunkFeedback?.length) {
      review.askingFeedback = true;
      const feedback = await vscode.window.showInputBox({
        title: `Qwen: undo ${path.basename(review.uri.fsPath)}`,
        prompt: 'Tell the model why, or what to do instead (optional; Enter to skip)',
        placeHolder: 'Feedback for the model',
      });
      review.askingFeedback = false;
      const fb = feedback?.trim();
      review.finish(fb ? { ...a, feedback: fb } : a);
      return;
    }
    review.finish(a);
  }

  /** Opens vscode.diff: the file on the left, the proposal (editable) on the right. */
  private async openDiff(uri?: string): Promise<void> {
    const review = this.reviewFor(uri);
    if (!review || review.finished) return;
    if (!review.diffUri) {
      const base = path.basename(review.uri.fsPath) || 'proposal';
      review.diffUri = vscode.Uri.from({ scheme: proposalScheme, path: `/${encodeURIComponent(review.p.toolCallId)}/${base}` });
      // Undone hunks stay out; pending and kept ones are in.
      const text = review.p.isNewFile
        ? review.p.newText
        : assembleText(review.p.oldText, review.hunks.map((h) => ({ ...h, state: h.state === 'undone' ? 'undone' : 'kept' })));
      this.fs.set(review.diffUri, text);
    }
    const title = `${path.basename(review.uri.fsPath)} ↔ Qwen's proposal${review.p.isNewFile ? ' (new file)' : ''}`;
    if (review.p.isNewFile) {
      await vscode.commands.executeCommand('vscode.diff', emptyUri, review.diffUri, title, { preview: false });
    } else {
      await vscode.commands.executeCommand('vscode.diff', review.uri, review.diffUri, title, { preview: false });
    }
    review.shown = true;
    this.updateContext();
  }

  private async finishDiff(keep: boolean, uri?: vscode.Uri | string): Promise<void> {
    const review = this.reviewFor(uri);
    if (!review || review.finished) return;
    if (!keep) {
      for (const h of review.hunks) h.state = 'undone';
      await this.answer(review, { outcome: 'rejected' });
      return;
    }
    let edited = review.p.newText;
    if (review.diffUri) {
      const key = review.diffUri.toString();
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
      edited = doc ? doc.getText() : new TextDecoder().decode(this.fs.readFile(review.diffUri));
    }
    for (const h of review.hunks) h.state = 'kept';
    await this.answer(review, answerForEditedText(review.p.oldText, review.p.newText, edited));
  }

  private tabsChanged(e: vscode.TabChangeEvent): void {
    this.redrawAll();
    if (e.closed.length === 0) return;
    const open = this.openTabs();
    for (const review of [...this.reviews.values()]) {
      if (review.finished || review.askingFeedback || !review.shown) continue;
      const fileOpen = !review.p.isNewFile && open.has(review.uri.toString());
      const diffOpen = review.diffUri !== undefined && open.has(review.diffUri.toString());
      if (!fileOpen && !diffOpen) {
        this.log.info(`review of ${review.uri.fsPath} closed: rejected`);
        for (const h of review.hunks) if (h.state === 'pending') h.state = 'undone';
        review.finish({ outcome: 'rejected', feedback: 'The user closed the review without keeping the change.' });
      }
    }
  }

  private documentChanged(e: vscode.TextDocumentChangeEvent): void {
    const review = this.reviews.get(e.document.uri.toString());
    if (!review || review.finished || e.contentChanges.length === 0) return;
    // Changes of one event are in the document's order; apply them last first
    // so that each range is still in the coordinates it was given in.
    const changes = [...e.contentChanges].sort((a, b) => b.range.start.line - a.range.start.line);
    for (const c of changes) {
      shiftHunks(review.hunks, {
        startLine: c.range.start.line,
        endLine: c.range.end.line,
        insertedLines: (c.text.match(/\r\n|\r|\n/g) ?? []).length,
      });
    }
    this.redrawAll();
    this.lensEmitter.fire();
  }

  private clearDecorations(editor: vscode.TextEditor): void {
    for (const d of [this.removedDeco, this.addedDeco, this.keptDeco, this.struckDeco, this.undoneDeco]) editor.setDecorations(d, []);
  }

  /** The files shown as plain text tabs: the left side of a diff shows the file without the review's marks. */
  private plainTabs(): Set<string> {
    const out = new Set<string>();
    for (const g of vscode.window.tabGroups.all) {
      const input = g.activeTab?.input;
      if (input instanceof vscode.TabInputText) out.add(input.uri.toString());
    }
    return out;
  }

  private redrawAll(): void {
    const plain = this.plainTabs();
    for (const editor of vscode.window.visibleTextEditors) {
      const key = editor.document.uri.toString();
      const review = this.reviews.get(key);
      if (!review || review.finished || !plain.has(key)) {
        this.clearDecorations(editor);
        continue;
      }
      this.draw(editor, review);
    }
  }

  private draw(editor: vscode.TextEditor, review: Review): void {
    const doc = editor.document;
    const removed: vscode.DecorationOptions[] = [];
    const added: vscode.DecorationOptions[] = [];
    const kept: vscode.DecorationOptions[] = [];
    const struck: vscode.DecorationOptions[] = [];
    const undone: vscode.DecorationOptions[] = [];
    for (const h of review.hunks) {
      const d = decorationFor(h, doc.lineCount);
      const preview = inlinePreview(d.added);
      const hover = new vscode.MarkdownString();
      hover.appendCodeblock(
        [...h.removed.split(/\r\n|\r|\n/).filter((_, i, a) => i < a.length - 1 || a[i] !== '').map((l) => `- ${l}`), ...d.added.map((l) => `+ ${l}`)].join('\n'),
        'diff',
      );
      if (h.state === 'undone') {
        const line = Math.min(d.lensLine, doc.lineCount - 1);
        undone.push({ range: new vscode.Range(line, 0, line, 0) });
        continue;
      }
      // Pending: the old lines on a removed background. Kept: the old lines
      // struck through. Both show the new text inline, in the editor's own
      // text colour on the inserted-text background (readable in every theme).
      if (d.removed) {
        (h.state === 'kept' ? struck : removed).push({
          range: new vscode.Range(d.removed.startLine, 0, d.removed.endLine, doc.lineAt(d.removed.endLine).text.length),
          hoverMessage: hover,
        });
      }
      const line = doc.lineAt(Math.min(d.anchor.line, doc.lineCount - 1));
      const at = d.anchor.side === 'after' ? line.range.end : line.range.start;
      const mark = h.state === 'kept' ? '✓ ' : '';
      (h.state === 'kept' ? kept : added).push({
        range: new vscode.Range(at, at),
        hoverMessage: hover,
        renderOptions: {
          [d.anchor.side]: {
            contentText:
              preview === '' ? ` ${mark}⌫ (lines removed)` : d.anchor.side === 'after' ? `  ${mark}→ ${preview}` : `${mark}+ ${preview}  `,
            color: new vscode.ThemeColor(preview === '' ? 'editorGhostText.foreground' : 'editor.foreground'),
            backgroundColor: preview === '' ? undefined : new vscode.ThemeColor('diffEditor.insertedTextBackground'),
            border: preview === '' ? undefined : '1px solid',
            borderColor: preview === '' ? undefined : new vscode.ThemeColor('diffEditor.insertedTextBorder'),
            margin: d.anchor.side === 'after' ? '0 0 0 1em' : '0 1em 0 0',
          },
        },
      });
    }
    editor.setDecorations(this.removedDeco, removed);
    editor.setDecorations(this.addedDeco, added);
    editor.setDecorations(this.keptDeco, kept);
    editor.setDecorations(this.struckDeco, struck);
    editor.setDecorations(this.undoneDeco, undone);
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const key = doc.uri.toString();
    let review = this.reviews.get(key);
    let diffSide = false;
    if (!review) {
      review = [...this.reviews.values()].find((r) => r.diffUri?.toString() === key);
      diffSide = review !== undefined;
    }
    if (!review || review.finished) return [];
    const top = new vscode.Range(0, 0, 0, 0);
    const n = review.hunks.length;
    const decided = review.hunks.filter((h) => h.state !== 'pending').length;
    if (diffSide) {
      return [
        new vscode.CodeLens(top, { title: '$(check) Keep this proposal', command: 'qwen.review.acceptDiff', arguments: [key] }),
        new vscode.CodeLens(top, { title: '$(discard) Undo', command: 'qwen.review.rejectDiff', arguments: [key] }),
        new vscode.CodeLens(top, { title: 'Edit the text here to change what is kept', command: '' }),
      ];
    }
    const lenses = [
      new vscode.CodeLens(top, { title: `Qwen: ${review.p.title || 'proposed edit'} (${decided}/${n} decided)`, command: '' }),
      new vscode.CodeLens(top, { title: '$(check-all) Keep all', command: 'qwen.review.keepAll', arguments: [key] }),
      new vscode.CodeLens(top, { title: '$(discard) Undo all', command: 'qwen.review.undoAll', arguments: [key] }),
      new vscode.CodeLens(top, { title: '$(diff) Review in diff editor', command: 'qwen.review.openDiff', arguments: [key] }),
    ];
    for (const h of review.hunks) {
      const line = Math.min(decorationFor(h, doc.lineCount).lensLine, doc.lineCount - 1);
      const r = new vscode.Range(line, 0, line, 0);
      if (h.state === 'pending') {
        lenses.push(new vscode.CodeLens(r, { title: 'Keep', command: 'qwen.review.keepHunk', arguments: [key, h.index] }));
        lenses.push(new vscode.CodeLens(r, { title: 'Undo', command: 'qwen.review.undoHunk', arguments: [key, h.index] }));
        lenses.push(new vscode.CodeLens(r, { title: 'Undo with reason…', command: 'qwen.review.undoHunkWithReason', arguments: [key, h.index] }));
      } else {
        const title = h.state === 'kept' ? '$(check) Kept' : h.feedback ? `$(discard) Undone: ${lensText(h.feedback)}` : '$(discard) Undone';
        lenses.push(new vscode.CodeLens(r, { title, command: '' }));
      }
    }
    return lenses;
  }

  private updateContext(): void {
    const active = vscode.window.activeTextEditor?.document.uri.toString();
    const inFile = active !== undefined && this.reviews.has(active) && !this.reviews.get(active)!.finished;
    const inDiff = active !== undefined && [...this.reviews.values()].some((r) => !r.finished && r.diffUri?.toString() === active);
    void vscode.commands.executeCommand('setContext', 'qwen.reviewActive', inFile);
    void vscode.commands.executeCommand('setContext', 'qwen.diffReviewActive', inDiff);
  }

  dispose(): void {
    for (const r of this.reviews.values()) r.finish({ outcome: 'cancelled' });
    for (const d of this.disposables) d.dispose();
    for (const d of [this.removedDeco, this.addedDeco, this.keptDeco, this.struckDeco, this.undoneDeco]) d.dispose();
    this.lensEmitter.dispose();
    this.decoEmitter.dispose();
    this.pendingEmitter.dispose();
  }
}
