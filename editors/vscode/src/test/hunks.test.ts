import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  allDecided,
  answerFor,
  answerForEditedText,
  assembleText,
  buildHunks,
  decorationFor,
  inlinePreview,
  lineStarts,
  offsetAt,
  shiftHunks,
  TextEdit,
} from '../review/hunks';

// calc.go of testdata/workspace and the two hunks of edit-two-hunks.txtar,
// as the server sends them (whole lines, no context).
const oldText = [
  'package calc',
  '',
  '// Add returns the sum of a and b.',
  'func Add(a, b int) int {',
  '\treturn a + b',
  '}',
  '',
  '// Scale multiplies every price by factor.',
  'func Scale(prices []int, factor int) []int {',
  '\tout := make([]int, len(prices))',
  '\tfor i, p := range prices {',
  '\t\tout[i] = p * factor',
  '\t}',
  '\treturn out',
  '}',
  '',
].join('\n');
const newText = oldText.replace('// Add returns the sum of a and b.', '// Add returns a + b.').replace('p * factor\n', 'p * factor / 100\n');
const edits: TextEdit[] = [
  { range: { start: { line: 2, character: 0 }, end: { line: 3, character: 0 } }, newText: '// Add returns a + b.\n' },
  { range: { start: { line: 11, character: 0 }, end: { line: 12, character: 0 } }, newText: '\t\tout[i] = p * factor / 100\n' },
];

test('lineStarts handles \\n, \\r\\n and a lone \\r', () => {
  assert.deepEqual(lineStarts('a\nb\r\nc\rd'), [0, 2, 5, 7]);
  assert.deepEqual(lineStarts(''), [0]);
  assert.deepEqual(lineStarts('x\n'), [0, 2]);
});

test('offsetAt refuses positions outside the text', () => {
  const t = 'ab\ncd';
  const s = lineStarts(t);
  assert.equal(offsetAt(t, s, { line: 1, character: 2 }), 5);
  assert.throws(() => offsetAt(t, s, { line: 0, character: 3 }), /past the end of line 0/);
  assert.throws(() => offsetAt(t, s, { line: 2, character: 0 }), /past the end of the text/);
  assert.throws(() => offsetAt(t, s, { line: -1, character: 0 }), /invalid position/);
});

test('buildHunks maps the server edits to hunks with their removed and added lines', () => {
  const hunks = buildHunks(oldText, edits);
  assert.equal(hunks.length, 2);
  assert.equal(hunks[0].removed, '// Add returns the sum of a and b.\n');
  assert.equal(hunks[0].added, '// Add returns a + b.\n');
  assert.equal(hunks[0].removedLines, 1);
  assert.equal(hunks[1].removed, '\t\tout[i] = p * factor\n');
  assert.equal(hunks[1].startLine, 11);
  assert.ok(hunks.every((h) => h.state === 'pending'));
});

test('buildHunks refuses unsorted or overlapping edits', () => {
  assert.throws(() => buildHunks(oldText, [edits[1], edits[0]]), /overlaps/);
  const overlapping: TextEdit = { range: { start: { line: 2, character: 0 }, end: { line: 5, character: 0 } }, newText: '' };
  const second: TextEdit = { range: { start: { line: 4, character: 0 }, end: { line: 6, character: 0 } }, newText: '' };
  assert.throws(() => buildHunks(oldText, [overlapping, second]), /overlaps/);
  const backwards: TextEdit = { range: { start: { line: 3, character: 0 }, end: { line: 2, character: 0 } }, newText: '' };
  assert.throws(() => buildHunks(oldText, [backwards]), /ends before it starts/);
});

test('keeping every hunk sends every index, without finalText', () => {
  const hunks = buildHunks(oldText, edits);
  assert.equal(allDecided(hunks), false);
  assert.throws(() => answerFor(hunks), /not decided/);
  hunks[0].state = 'kept';
  hunks[1].state = 'kept';
  assert.equal(assembleText(oldText, hunks), newText);
  assert.deepEqual(answerFor(hunks), { keptHunks: [0, 1] });
});

test('undoing every hunk sends no index', () => {
  const hunks = buildHunks(oldText, edits);
  hunks.forEach((h) => (h.state = 'undone'));
  assert.equal(assembleText(oldText, hunks), oldText);
  assert.deepEqual(answerFor(hunks), { keptHunks: [] });
});

test('an undone hunk with a reason sends it as hunkFeedback beside keptHunks; blank reasons and kept hunks send none', () => {
  const hunks = buildHunks(oldText, edits);
  hunks[0].state = 'kept';
  hunks[0].feedback = 'ignored: the hunk is kept';
  hunks[1].state = 'undone';
  hunks[1].feedback = '  keep the factor as it is  ';
  assert.deepEqual(answerFor(hunks), { keptHunks: [0], hunkFeedback: [{ hunk: 1, feedback: 'keep the factor as it is' }] });
  hunks[1].feedback = '   ';
  assert.deepEqual(answerFor(hunks), { keptHunks: [0] });
  hunks[0].state = 'undone';
  hunks[0].feedback = 'too short';
  hunks[1].feedback = 'no percentages';
  assert.deepEqual(answerFor(hunks), {
    keptHunks: [],
    hunkFeedback: [
      { hunk: 0, feedback: 'too short' },
      { hunk: 1, feedback: 'no percentages' },
    ],
  });
});

test('keeping one hunk and undoing the other sends the kept index; the diff editor shows exactly the kept change', () => {
  const hunks = buildHunks(oldText, edits);
  hunks[0].state = 'kept';
  hunks[1].state = 'undone';
  assert.deepEqual(answerFor(hunks), { keptHunks: [0] });
  assert.equal(assembleText(oldText, hunks), oldText.replace('// Add returns the sum of a and b.', '// Add returns a + b.'));
  hunks[0].state = 'undone';
  hunks[1].state = 'kept';
  assert.deepEqual(answerFor(hunks), { keptHunks: [1] });
  assert.equal(assembleText(oldText, hunks), oldText.replace('p * factor\n', 'p * factor / 100\n'));
});

test('insertions, deletions and a hunk at the end of a text without a final newline', () => {
  const old = 'a\nb\nc';
  const hunks = buildHunks(old, [
    { range: { start: { line: 1, character: 0 }, end: { line: 1, character: 0 } }, newText: 'x\ny\n' },
    { range: { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } }, newText: '' },
    { range: { start: { line: 2, character: 0 }, end: { line: 2, character: 1 } }, newText: 'C\n' },
  ]);
  assert.deepEqual(hunks.map((h) => h.removedLines), [0, 1, 1]);
  hunks[0].state = 'kept';
  hunks[1].state = 'undone';
  hunks[2].state = 'kept';
  assert.equal(assembleText(old, hunks), 'a\nx\ny\nb\nC\n');
});

test('CRLF text keeps its line breaks in the assembled text', () => {
  const old = 'one\r\ntwo\r\nthree\r\n';
  const hunks = buildHunks(old, [
    { range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } }, newText: 'ONE\r\n' },
    { range: { start: { line: 2, character: 0 }, end: { line: 3, character: 0 } }, newText: 'THREE\r\n' },
  ]);
  hunks[0].state = 'undone';
  hunks[1].state = 'kept';
  assert.deepEqual(answerFor(hunks), { keptHunks: [1] });
  assert.equal(assembleText(old, hunks), 'one\r\ntwo\r\nTHREE\r\n');
});

test('a new file is one insertion hunk', () => {
  const hunks = buildHunks('', [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: 'package calc\n' }]);
  assert.equal(hunks.length, 1);
  hunks[0].state = 'kept';
  assert.deepEqual(answerFor(hunks), { keptHunks: [0] });
  assert.equal(assembleText('', hunks), 'package calc\n');
});

test('decorationFor: a replacement highlights the removed lines and shows the added text after them', () => {
  const hunks = buildHunks(oldText, edits);
  const lines = lineStarts(oldText).length;
  assert.deepEqual(decorationFor(hunks[0], lines), {
    removed: { startLine: 2, endLine: 2 },
    added: ['// Add returns a + b.'],
    anchor: { line: 2, side: 'after' },
    lensLine: 2,
  });
  const multi = buildHunks(oldText, [{ range: { start: { line: 8, character: 0 }, end: { line: 15, character: 0 } }, newText: 'func Scale() {}\n' }]);
  assert.deepEqual(decorationFor(multi[0], lines).removed, { startLine: 8, endLine: 14 });
  assert.deepEqual(decorationFor(multi[0], lines).anchor, { line: 14, side: 'after' });
});

test('decorationFor: an insertion is shown before the line it goes above, a deletion has no added text', () => {
  const ins = buildHunks(oldText, [{ range: { start: { line: 7, character: 0 }, end: { line: 7, character: 0 } }, newText: '// New.\n// Two.\n' }]);
  const d = decorationFor(ins[0], 16);
  assert.equal(d.removed, null);
  assert.deepEqual(d.added, ['// New.', '// Two.']);
  assert.deepEqual(d.anchor, { line: 7, side: 'before' });
  const del = buildHunks(oldText, [{ range: { start: { line: 2, character: 0 }, end: { line: 3, character: 0 } }, newText: '' }]);
  assert.deepEqual(decorationFor(del[0], 16).added, []);
});

test('inlinePreview joins added lines and cuts long text', () => {
  assert.equal(inlinePreview(['a', '\tb']), 'a ⏎   b');
  assert.equal(inlinePreview([]), '');
  const long = inlinePreview(['x'.repeat(500)], 20);
  assert.equal(long.length, 20);
  assert.ok(long.endsWith('…'));
});

test('shiftHunks moves hunks below a change by the lines it added or removed', () => {
  const hunks = buildHunks(oldText, edits);
  // Two new lines typed at line 5 (between the hunks).
  shiftHunks(hunks, { startLine: 5, endLine: 5, insertedLines: 2 });
  assert.equal(hunks[0].line, 2);
  assert.equal(hunks[1].line, 13);
  // Lines 0..1 joined into one, above both hunks.
  shiftHunks(hunks, { startLine: 0, endLine: 1, insertedLines: 0 });
  assert.equal(hunks[0].line, 1);
  assert.equal(hunks[1].line, 12);
  // Still maps back to the proposal's hunks: the answer does not depend on the live position.
  hunks[0].state = 'kept';
  hunks[1].state = 'undone';
  assert.deepEqual(answerFor(hunks), { keptHunks: [0] });
  assert.equal(assembleText(oldText, hunks), oldText.replace('the sum of a and b', 'a + b'));
});

test('answerForEditedText: the proposal as typed in the diff editor', () => {
  assert.deepEqual(answerForEditedText('a', 'b', 'b'), { outcome: 'accepted' });
  assert.deepEqual(answerForEditedText('a', 'b', 'a'), { outcome: 'rejected' });
  assert.deepEqual(answerForEditedText('a', 'b', 'c'), { outcome: 'accepted', finalText: 'c' });
});
