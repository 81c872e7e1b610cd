import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { addUsage, formatContext, formatSessionUsage, formatTurnUsage, modelItems, modelNameNotice, noUsage, parseModelList, parseUsage, tokens } from '../models';
import { isHostMessage, parseWebviewMessage } from '../chat/protocol';

// qwen/listModels as the server answers it for testdata/qwen-code-config.
const listed = {
  models: [
    {
      id: 'qwen3-coder-plus',
      name: 'Qwen3 Coder Plus (DashScope)',
      provider: 'openai',
      baseUrl: 'https://dashscope.aliyuncs.com/compatible-mode/v1',
      description: 'Qwen3-Coder on Alibaba Cloud Model Studio',
    },
    { id: 'qwen/qwen3-coder', name: 'Qwen3 Coder (OpenRouter)', provider: 'openai', baseUrl: 'https://openrouter.ai/api/v1' },
    { id: 'claude-sonnet-4-5', name: 'Claude Sonnet 4.5', provider: 'anthropic', baseUrl: 'https://api.anthropic.com/v1/' },
  ],
  current: 'qwen/qwen3-coder',
};

test('the model list is read with every field; entries without an id are dropped', () => {
  const l = parseModelList({ ...listed, models: [...listed.models, { name: 'no id' }, 'junk', { id: '' }] });
  assert.ok(l);
  assert.deepEqual(
    l.models.map((m) => m.id),
    ['qwen3-coder-plus', 'qwen/qwen3-coder', 'claude-sonnet-4-5'],
  );
  assert.equal(l.current, 'qwen/qwen3-coder');
  assert.equal(l.models[0].description, 'Qwen3-Coder on Alibaba Cloud Model Studio');
  assert.equal(l.models[1].description, undefined);
});

test('a model list without models, or with none configured, is still a list', () => {
  assert.deepEqual(parseModelList({ models: [], current: null }), { models: [], current: null });
  assert.equal(parseModelList({ current: 'x' }), undefined);
  assert.equal(parseModelList(null), undefined);
  assert.equal(parseModelList([]), undefined);
  // A nameless entry is shown by its id.
  assert.equal(parseModelList({ models: [{ id: 'scripted' }], current: 'scripted' })?.models[0].name, 'scripted');
});

test('the picker rows: name, provider, endpoint and description; the current one ticked', () => {
  const items = modelItems(parseModelList(listed)!);
  assert.deepEqual(items[0], {
    label: '$(blank) Qwen3 Coder Plus (DashScope)',
    description: 'openai · qwen3-coder-plus',
    detail: 'https://dashscope.aliyuncs.com/compatible-mode/v1 — Qwen3-Coder on Alibaba Cloud Model Studio',
    id: 'qwen3-coder-plus',
    current: false,
  });
  assert.equal(items[1].label, '$(check) Qwen3 Coder (OpenRouter)');
  assert.equal(items[1].description, 'openai · qwen/qwen3-coder · current');
  assert.equal(items[1].detail, 'https://openrouter.ai/api/v1');
  assert.equal(items[1].current, true);
  assert.equal(items.filter((i) => i.current).length, 1);
  // A model named by its id does not repeat it.
  assert.equal(modelItems({ models: [{ id: 'm', name: 'm', provider: 'openai', baseUrl: '' }], current: null })[0].description, 'openai');
  assert.equal(modelItems({ models: [{ id: 'm', name: 'm', provider: 'openai', baseUrl: '' }], current: null })[0].detail, undefined);
});

test('a turn line shows in and out tokens, and cached only when the cache served some', () => {
  const u = parseUsage({ inputTokens: 1700, outputTokens: 40, totalTokens: 1740, cachedTokens: 0 });
  assert.ok(u);
  assert.equal(formatTurnUsage(u), 'Tokens: 1,700 in · 40 out');
  const c = parseUsage({ inputTokens: 12345, outputTokens: 678, totalTokens: 13023, cachedTokens: 12000 })!;
  assert.equal(formatTurnUsage(c), 'Tokens: 12,345 in · 678 out · 12,000 cached');
});

test('usage that says nothing, or is not usage, gives no line', () => {
  assert.equal(parseUsage(undefined), undefined);
  assert.equal(parseUsage({ inputTokens: 0, outputTokens: 0, totalTokens: 0, cachedTokens: 0 }), undefined);
  assert.equal(parseUsage('1700'), undefined);
  // Odd fields count as zero; a missing total is the sum.
  assert.deepEqual(parseUsage({ inputTokens: 10, outputTokens: -3, cachedTokens: 'x' }), {
    inputTokens: 10,
    outputTokens: 0,
    totalTokens: 10,
    cachedTokens: 0,
  });
});

test('session totals add the turns up', () => {
  const a = parseUsage({ inputTokens: 1700, outputTokens: 40, totalTokens: 1740, cachedTokens: 0 })!;
  const b = parseUsage({ inputTokens: 900, outputTokens: 20, totalTokens: 920, cachedTokens: 300 })!;
  const total = addUsage(addUsage(noUsage, a), b);
  assert.deepEqual(total, { inputTokens: 2600, outputTokens: 60, totalTokens: 2660, cachedTokens: 300 });
  assert.equal(formatSessionUsage(total, 2), 'Session: 2 turns · 2,600 in · 60 out · 300 cached tokens');
  assert.equal(formatSessionUsage(a, 1), 'Session: 1 turn · 1,700 in · 40 out tokens');
});

test('numbers are grouped by thousands; the context line needs a size', () => {
  assert.equal(tokens(0), '0');
  assert.equal(tokens(999), '999');
  assert.equal(tokens(1000), '1,000');
  assert.equal(tokens(1234567), '1,234,567');
  assert.equal(formatContext(920, 131072), 'Context: 920 of 131,072 tokens (1%)');
  assert.equal(formatContext(200000, 131072), 'Context: 200,000 of 131,072 tokens (100%)');
  assert.equal(formatContext(10, 0), undefined);
});

test('the chat may ask for the model picker; turn ends and the state carry the token lines', () => {
  assert.deepEqual(parseWebviewMessage({ type: 'pickModel' }), { type: 'pickModel' });
  assert.equal(parseWebviewMessage({ type: 'pickModel', modelId: 'x' }), undefined);
  assert.ok(isHostMessage({ type: 'turnEnd', stopReason: 'end_turn', usage: 'Tokens: 1 in · 1 out' }));
  assert.ok(isHostMessage({ type: 'turnEnd', stopReason: 'end_turn' }));
  assert.equal(isHostMessage({ type: 'turnEnd', stopReason: 'end_turn', usage: 5 }), false);
  const state = { type: 'state', busy: false, mode: 'default', sessionId: 's', model: 'm', unusableModel: null, status: 'idle', setupHint: null };
  assert.ok(isHostMessage({ ...state, tokens: 'Session: 1 turn · 1 in · 1 out tokens' }));
  assert.ok(isHostMessage({ ...state, tokens: null }));
  assert.equal(isHostMessage(state), false);
});

test('a change of qwen.model.name says which model the chat uses, or why it keeps its own', () => {
  assert.equal(
    modelNameNotice({ name: 'qwen-fast', def: 'qwen-fast', session: true, before: 'qwen-deep', after: 'qwen-fast' }),
    'Qwen: qwen.model.name is now qwen-fast: this chat switches from qwen-deep to qwen-fast from its next request.',
  );
  assert.equal(
    modelNameNotice({ name: 'qwen-fast', def: 'qwen-fast', session: true, before: 'qwen-fast', after: 'qwen-fast' }),
    'Qwen: qwen.model.name is now qwen-fast: this chat uses qwen-fast from its next request.',
  );
  assert.equal(modelNameNotice({ name: 'm2', def: 'm2', session: false, before: null, after: null }), 'Qwen: qwen.model.name is now m2: the next chat session uses m2.');
  assert.equal(
    modelNameNotice({ name: 'm2', def: 'm2', session: true, before: 'qwen-deep', after: 'qwen-deep', error: 'unknown model m2; configured: qwen-deep' }),
    'Qwen: qwen.model.name is now m2, but this chat keeps qwen-deep: unknown model m2; configured: qwen-deep',
  );
  assert.equal(
    modelNameNotice({ name: '', def: null, session: true, before: 'qwen-deep', after: 'qwen-deep', problem: 'no model' }),
    'Qwen: qwen.model.name was cleared, but no model can be used with the settings as they are (no model): this chat keeps qwen-deep. Check Setup says what is missing.',
  );
});
