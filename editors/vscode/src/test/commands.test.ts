import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { completeInput, matchCommands, maxCommands, parseCommands, SlashCommand, slashQuery } from '../chat/commands';
import { isHostMessage, parseWebviewMessage } from '../chat/protocol';

const list = [
  { name: 'stats', description: 'Tokens, cache hits, tool calls and time of this session', input: null, source: 'builtin', needsModel: false },
  { name: 'clear', description: 'Start the conversation over', input: null, source: 'builtin', needsModel: false },
  { name: 'model', description: 'Show or set the model', input: { hint: '[model id]' }, source: 'builtin', needsModel: false },
  { name: 'git:commit', description: 'Write a commit message', input: { hint: 'arguments' }, source: 'project', needsModel: true },
  { name: 'set-model-notes', description: 'Mine', input: null, source: 'user', needsModel: true },
  { name: 'help', description: 'List the commands', input: null, source: 'builtin', needsModel: false },
];

const names = (cs: SlashCommand[]) => cs.map((c) => c.name);

test('parseCommands reads qwen/listCommands and available_commands_update, sorted by name', () => {
  const fromList = parseCommands({ commands: list });
  assert.deepEqual(names(fromList), ['clear', 'git:commit', 'help', 'model', 'set-model-notes', 'stats']);
  assert.deepEqual(fromList.find((c) => c.name === 'model'), {
    name: 'model',
    description: 'Show or set the model',
    hint: '[model id]',
    source: 'builtin',
  });
  assert.equal(fromList.find((c) => c.name === 'git:commit')?.source, 'project');
  assert.equal(fromList.find((c) => c.name === 'stats')?.hint, null);
  // The ACP-shaped update (no source): builtin; a bare array too.
  assert.deepEqual(parseCommands({ availableCommands: [{ name: 'x', description: 'd', input: null }] }), [
    { name: 'x', description: 'd', hint: null, source: 'builtin' },
  ]);
  assert.deepEqual(names(parseCommands(list)), names(fromList));
});

test('parseCommands skips what does not fit and never throws', () => {
  for (const bad of [null, undefined, 3, 'stats', {}, { commands: 'x' }, { commands: null }]) assert.deepEqual(parseCommands(bad), []);
  const got = parseCommands({
    commands: [
      null,
      7,
      [],
      { name: '' },
      { name: '/stats', description: 'leading slash' },
      { name: 'two words' },
      { name: 'ctl\u0007' },
      { name: 'x'.repeat(101) },
      { name: 5 },
      { name: 'ok', description: 42, input: { hint: 3 }, source: 'evil' },
      { name: 'ok', description: 'a second ok is dropped' },
      { name: 'long', description: 'y'.repeat(2000), input: { hint: '  ' } },
      { name: 'lines', description: 'one\ntwo\t three' },
    ],
  });
  assert.deepEqual(names(got), ['lines', 'long', 'ok']);
  assert.deepEqual(got.find((c) => c.name === 'ok'), { name: 'ok', description: '', hint: null, source: 'builtin' });
  assert.equal(got.find((c) => c.name === 'long')!.description.length, 500);
  assert.equal(got.find((c) => c.name === 'long')!.hint, null);
  assert.equal(got.find((c) => c.name === 'lines')!.description, 'one two three');
  const many = Array.from({ length: maxCommands + 50 }, (_, i) => ({ name: `c${i}`, description: '' }));
  assert.equal(parseCommands({ commands: many }).length, maxCommands);
});

test('slashQuery: only a name being typed at the very start of the input', () => {
  assert.equal(slashQuery('/', 1), '');
  assert.equal(slashQuery('/st', 3), 'st');
  assert.equal(slashQuery('/git:co', 7), 'git:co');
  assert.equal(slashQuery('/st', 2), undefined, 'caret inside the name');
  assert.equal(slashQuery('/st more', 3), 'st', 'caret at the end of the name, arguments after');
  assert.equal(slashQuery('/stats ', 7), undefined, 'the name is done');
  assert.equal(slashQuery('/model qwen', 11), undefined, 'typing an argument');
  assert.equal(slashQuery('//text', 2), undefined, '// sends a slash as text');
  assert.equal(slashQuery(' /st', 4), undefined, 'not at the start');
  assert.equal(slashQuery('hi /st', 6), undefined);
  assert.equal(slashQuery('a\n/st', 5), undefined, 'not on a later line');
  assert.equal(slashQuery('', 0), undefined);
});

test('matchCommands: prefix first, then a later part of the name, then anywhere', () => {
  const all = parseCommands({ commands: list });
  assert.deepEqual(names(matchCommands(all, '')), names(all));
  assert.deepEqual(names(matchCommands(all, 'st')), ['stats']);
  assert.deepEqual(names(matchCommands(all, 'ST')), ['stats'], 'case-insensitive');
  assert.deepEqual(names(matchCommands(all, 'model')), ['model', 'set-model-notes']);
  assert.deepEqual(names(matchCommands(all, 'commit')), ['git:commit']);
  assert.deepEqual(names(matchCommands(all, 'el')), ['help', 'model', 'set-model-notes']);
  assert.deepEqual(matchCommands(all, 'zzz'), []);
});

test('completeInput puts "/name " in place of what was typed and keeps the rest', () => {
  assert.deepEqual(completeInput('/st', 3, 'stats'), { text: '/stats ', caret: 7 });
  assert.deepEqual(completeInput('/', 1, 'help'), { text: '/help ', caret: 6 });
  assert.deepEqual(completeInput('/mo  qwen3', 3, 'model'), { text: '/model qwen3', caret: 7 });
  assert.deepEqual(completeInput('/git:c fix the bug', 6, 'git:commit'), { text: '/git:commit fix the bug', caret: 12 });
});

test('the commands message and listCommands pass the message checks; bad ones do not', () => {
  const commands = parseCommands({ commands: list });
  assert.ok(isHostMessage({ type: 'commands', commands }));
  assert.ok(isHostMessage({ type: 'commands', commands: [] }));
  assert.ok(!isHostMessage({ type: 'commands' }));
  assert.ok(!isHostMessage({ type: 'commands', commands: [{ name: 'x' }] }));
  assert.ok(!isHostMessage({ type: 'commands', commands: [{ name: 'x', description: '', hint: null, source: 'other' }] }));
  assert.ok(!isHostMessage({ type: 'commands', commands: Array.from({ length: maxCommands + 1 }, () => commands[0]) }));
  assert.deepEqual(parseWebviewMessage({ type: 'listCommands' }), { type: 'listCommands' });
  assert.equal(parseWebviewMessage({ type: 'listCommands', sessionId: 'x' }), undefined);
});
