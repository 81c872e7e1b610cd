import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { callEnd, outcomeLabel, parseReview, rejectedHunkLines } from '../chat/outcome';
import { isHostMessage } from '../chat/protocol';

// The _meta of the last update of an edit kept in part, as protocol.md's
// "How a tool call ended" shows it (and as a replay carries it).
const partial = {
  qwen: {
    outcome: 'completed',
    review: {
      kept: 2,
      total: 3,
      summary: '2 of 3 changes kept',
      hunks: [
        { startLine: 3, endLine: 3, kept: true },
        { startLine: 8, endLine: 8, kept: false, feedback: 'keep the long comment' },
        { startLine: 12, endLine: 12, kept: true },
      ],
    },
  },
};

test('a review kept in part says "2 of 3 changes kept" where a plain edit says "completed"', () => {
  const end = callEnd('completed', partial);
  assert.equal(end.outcome, 'completed');
  assert.equal(end.undone, undefined);
  assert.equal(outcomeLabel({ status: 'completed', ...end }), '2 of 3 changes kept');
  assert.equal(outcomeLabel({ status: 'completed', ...callEnd('completed', { qwen: { outcome: 'completed' } }) }), 'completed');
});

test('the expanded card lists each undone hunk with its line and reason', () => {
  const end = callEnd('completed', partial);
  assert.deepEqual(rejectedHunkLines(end.review), ['Undone at line 8: keep the long comment']);
  const noReason = parseReview({ kept: 1, total: 2, summary: '1 of 2 changes kept', hunks: [{ startLine: 4, endLine: 6, kept: false }, { startLine: 9, endLine: 9, kept: true }] });
  assert.deepEqual(rejectedHunkLines(noReason), ['Undone at lines 4–6']);
  assert.deepEqual(rejectedHunkLines(undefined), []);
});

test('after an undo the card keeps its summary and says undone', () => {
  // The undo's update: status and _meta only, no content.
  const undo = { qwen: { ...partial.qwen, undone: true } };
  const end = callEnd('completed', undo);
  assert.equal(end.undone, true);
  assert.equal(outcomeLabel({ status: 'completed', ...end }), '2 of 3 changes kept, undone');
  assert.equal(outcomeLabel({ status: 'completed', ...callEnd('completed', { qwen: { outcome: 'completed', undone: true } }) }), 'completed, undone');
});

test('without _meta the label is the outcome from the status; rejected, failed and cancelled say so', () => {
  assert.equal(outcomeLabel({ status: 'in_progress' }), 'in progress');
  assert.equal(outcomeLabel({ status: 'failed', ...callEnd('failed', undefined) }), 'failed');
  assert.equal(outcomeLabel({ status: 'failed', ...callEnd('failed', { qwen: { outcome: 'rejected' } }) }), 'rejected');
  assert.equal(outcomeLabel({ status: 'failed', ...callEnd('failed', { qwen: { outcome: 'cancelled' } }) }), 'cancelled');
});

test('a malformed review is ignored rather than drawn', () => {
  assert.equal(callEnd('completed', { qwen: { outcome: 'completed', review: { kept: 1, total: 2, summary: '', hunks: [] } } }).review, undefined);
  assert.equal(callEnd('completed', { qwen: { outcome: 'completed', review: { kept: 1, total: 2, summary: 'x', hunks: [{ startLine: 'a' }] } } }).review, undefined);
  assert.equal(callEnd('completed', { qwen: { outcome: 'completed', undone: 'yes' } }).undone, undefined);
});

test('the webview accepts a card with a review and undone, and refuses a bad one', () => {
  const card = { id: 'c1', title: 'calc/calc.go', kind: 'edit', status: 'completed', outcome: 'completed', review: callEnd('completed', partial).review, undone: true };
  assert.equal(isHostMessage({ type: 'tool', card }), true);
  assert.equal(isHostMessage({ type: 'tool', card: { ...card, review: { kept: 'two' } } }), false);
  assert.equal(isHostMessage({ type: 'tool', card: { ...card, undone: 1 } }), false);
});
