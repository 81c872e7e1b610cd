// What a tool card says about how its call ended, from the call's last
// update (_meta.qwen: outcome, review, undone; protocol.md "How a tool call
// ended"). Used by the extension when it folds updates into a card and by
// the webview when it draws one, for live sessions and replays alike: a
// replay's last tool_call_update carries the same _meta.qwen as the live one.

export type Outcome = 'completed' | 'failed' | 'rejected' | 'cancelled';

/** One hunk of a review decided hunk by hunk, as the server reports it. */
export interface ReviewHunk {
  startLine: number;
  endLine: number;
  kept: boolean;
  feedback?: string;
}

/** A review decided hunk by hunk: "2 of 3 changes kept". */
export interface ReviewSummary {
  kept: number;
  total: number;
  summary: string;
  hunks: ReviewHunk[];
}

/** What _meta.qwen says about the end of a call. */
export interface CallEnd {
  outcome?: Outcome;
  review?: ReviewSummary;
  undone?: boolean;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isOutcome = (v: unknown): v is Outcome => v === 'completed' || v === 'failed' || v === 'rejected' || v === 'cancelled';
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** Longest reason or summary kept for the card. */
const maxText = 4000;

function reviewHunk(v: unknown): ReviewHunk | undefined {
  if (!isObj(v) || !isCount(v.startLine) || !isCount(v.endLine) || typeof v.kept !== 'boolean') return undefined;
  const h: ReviewHunk = { startLine: v.startLine, endLine: v.endLine, kept: v.kept };
  if (typeof v.feedback === 'string' && v.feedback.trim() !== '') h.feedback = v.feedback.slice(0, maxText);
  return h;
}

/** A review summary, or undefined when the value is not one. */
export function parseReview(v: unknown): ReviewSummary | undefined {
  if (!isObj(v) || !isCount(v.kept) || !isCount(v.total) || typeof v.summary !== 'string' || v.summary === '') return undefined;
  if (!Array.isArray(v.hunks) || v.hunks.length > 10000) return undefined;
  const hunks: ReviewHunk[] = [];
  for (const x of v.hunks) {
    const h = reviewHunk(x);
    if (!h) return undefined;
    hunks.push(h);
  }
  return { kept: v.kept, total: v.total, summary: v.summary.slice(0, maxText), hunks };
}

/**
 * How a call ended, from an update's status and _meta: _meta.qwen's
 * outcome (else the status when it is final), its review and whether the
 * call was undone. Fields the update does not carry are left out.
 */
export function callEnd(status: string | undefined, meta: unknown): CallEnd {
  const out: CallEnd = {};
  const q = isObj(meta) && isObj(meta.qwen) ? meta.qwen : undefined;
  if (q && isOutcome(q.outcome)) out.outcome = q.outcome;
  else if (status === 'completed' || status === 'failed') out.outcome = status;
  if (q) {
    const review = parseReview(q.review);
    if (review) out.review = review;
    if (q.undone === true) out.undone = true;
  }
  return out;
}

/** The card's fields this module draws. */
export interface OutcomeCard {
  status: string;
  outcome?: Outcome;
  review?: ReviewSummary;
  undone?: boolean;
}

/**
 * The words on a card's header in place of "completed": the review's
 * summary ("2 of 3 changes kept") when the person decided hunk by hunk,
 * else the outcome, else the status; ", undone" once its turn was undone.
 */
export function outcomeLabel(card: OutcomeCard): string {
  const base = card.review?.summary ?? card.outcome ?? card.status.replace('_', ' ');
  return card.undone ? `${base}, undone` : base;
}

/** The lines listing a review's rejected hunks, shown when the card is expanded. */
export function rejectedHunkLines(review: ReviewSummary | undefined): string[] {
  if (!review) return [];
  return review.hunks
    .filter((h) => !h.kept)
    .map((h) => {
      const where = h.startLine === h.endLine ? `line ${h.startLine}` : `lines ${h.startLine}–${h.endLine}`;
      return h.feedback ? `Undone at ${where}: ${h.feedback}` : `Undone at ${where}`;
    });
}
