import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { findMentions, maxPromptLength, parseWebviewMessage, serverApprovalModes } from '../chat/protocol';

test('valid webview messages pass unchanged', () => {
  const ok: unknown[] = [
    { type: 'ready' },
    { type: 'prompt', text: 'explain @calc/calc.go' },
    { type: 'cancel' },
    { type: 'newSession' },
    { type: 'listSessions' },
    { type: 'setMode', mode: 'auto-edit' },
    { type: 'pickMention' },
    { type: 'openLocation', path: '/ws/calc/calc.go' },
    { type: 'openLocation', path: '/ws/calc/calc.go', line: 12 },
  ];
  for (const m of ok) assert.deepEqual(parseWebviewMessage(m), m, JSON.stringify(m));
});

test('invalid webview messages are dropped', () => {
  const bad: unknown[] = [
    null,
    undefined,
    'prompt',
    42,
    [],
    [{ type: 'ready' }],
    {},
    { type: 7 },
    { type: 'unknown' },
    { type: 'toString' },
    { type: '__proto__' },
    { type: 'prompt' },
    { type: 'prompt', text: '' },
    { type: 'prompt', text: 3 },
    { type: 'prompt', text: 'x'.repeat(maxPromptLength + 1) },
    { type: 'prompt', text: 'hi', sessionId: 'other' },
    { type: 'setMode', mode: 'root' },
    { type: 'setMode' },
    { type: 'cancel', now: true },
    { type: 'openLocation', path: '' },
    { type: 'openLocation', path: '/x', line: 0 },
    { type: 'openLocation', path: '/x', line: 1.5 },
    { type: 'openLocation', path: '/x', line: '3' },
    Object.assign(Object.create({ polluted: true }), { type: 'ready' }),
  ];
  for (const m of bad) assert.equal(parseWebviewMessage(m), undefined, String(JSON.stringify(m)));
});

test('findMentions finds @paths at the start or after whitespace', () => {
  assert.deepEqual(findMentions('@main.go explain, then see @calc/calc.go.'), ['main.go', 'calc/calc.go']);
  assert.deepEqual(findMentions('mail me at a@b.c'), []);
  assert.deepEqual(findMentions('@a @a (@b)'), ['a']);
});

test('isHostMessage accepts what the extension sends and nothing else', async () => {
  const { isHostMessage } = await import('../chat/protocol');
  const ok: unknown[] = [
    { type: 'state', busy: false, mode: 'default', sessionId: null, model: null, unusableModel: null, status: 'idle', setupHint: null, tokens: null },
    { type: 'agent', id: 'a1', html: '<p>hi</p>' },
    { type: 'tool', card: { id: 'c', title: 'ReadFile', kind: 'read', status: 'completed', output: 'x' } },
    { type: 'tool', card: { id: 'c', title: 'Edit', kind: 'edit', status: 'pending', diffs: [{ path: '/a', oldText: null, newText: 'n' }] } },
    { type: 'plan', entries: [{ content: 'Read', status: 'pending', priority: 'medium' }] },
    { type: 'turnEnd', stopReason: 'end_turn' },
    { type: 'clear' },
  ];
  for (const m of ok) assert.equal(isHostMessage(m), true, JSON.stringify(m));
  const bad: unknown[] = [
    { type: 'state', busy: 'no', mode: 'default', sessionId: null, model: null, status: 'idle' },
    { type: 'agent', id: 'a1' },
    { type: 'tool', card: { id: 'c', title: 'x', kind: 'read' } },
    { type: 'tool', card: { id: 'c', title: 'x', kind: 'read', status: 'ok', diffs: [{ path: '/a', newText: 1 }] } },
    { type: 'plan', entries: [{ content: 1 }] },
    { type: 'eval', code: 'alert(1)' },
    null,
  ];
  for (const m of bad) assert.equal(isHostMessage(m), false, JSON.stringify(m));
});


test('serverApprovalModes reads the server list, falling back for an older server', () => {
  assert.deepEqual(serverApprovalModes({ qwen: { approvalModes: ['default', 'plan', 'review-only'] } }), ['default', 'plan', 'review-only']);
  for (const old of [undefined, null, {}, { qwen: {} }, { qwen: { approvalModes: [] } }, { qwen: { approvalModes: ['ok', 3] } }, { qwen: { approvalModes: 'yolo' } }]) {
    assert.deepEqual(serverApprovalModes(old), ['default', 'plan', 'auto-edit', 'yolo'], JSON.stringify(old));
  }
});
