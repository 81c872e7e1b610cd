import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  codeIntelligenceSummary,
  elsewhereHint,
  fixActions,
  fixPlaces,
  parseCheckSetup,
  relativeTime,
  settingsQuery,
  setupProblem,
  statusFor,
  toolOutcome,
} from '../setup';
import { optionItems } from '../permissionLabels';
import { isHostMessage, parseWebviewMessage } from '../chat/protocol';

// The error.data of the contract's table, as the server sends it.
const cases = {
  dead_url: { reason: 'model_unreachable', settings: ['model.baseUrl'], env: ['OPENAI_BASE_URL'], baseUrl: 'http://127.0.0.1:9/v1' },
  name_only: { reason: 'no_endpoint', settings: ['model.baseUrl', 'model.apiKey'], env: ['OPENAI_API_KEY', 'OPENAI_BASE_URL'], model: 'qwen3-coder-plus' },
  missing_key: { reason: 'no_api_key', settings: ['model.apiKey'], env: ['OPENAI_API_KEY', 'DASHSCOPE_API_KEY'], baseUrl: 'https://example.invalid/v1' },
  nothing: { reason: 'no_model', settings: ['model.name', 'model.baseUrl'], env: ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_MODEL'] },
  other: { reason: 'model_error', settings: [], env: [] },
};

test('a dead base URL opens qwen.model.baseUrl', () => {
  const p = setupProblem(cases.dead_url)!;
  assert.equal(p.reason, 'model_unreachable');
  const f = fixPlaces(p);
  assert.deepEqual(f.vscode, ['qwen.model.baseUrl']);
  assert.equal(settingsQuery(f.vscode), 'qwen.model.baseUrl');
  assert.deepEqual(fixActions(f), ['Open Settings']);
  assert.equal(elsewhereHint(f), '');
  assert.equal(statusFor(p.reason), 'error');
});

test('a model name alone opens the base URL and says where the key goes', () => {
  const f = fixPlaces(setupProblem(cases.name_only)!);
  assert.deepEqual(f.vscode, ['qwen.model.baseUrl']);
  assert.deepEqual(f.elsewhere, ['model.apiKey']);
  assert.deepEqual(fixActions(f), ['Open Settings', 'Set API Key']);
  assert.match(elsewhereHint(f), /Qwen: Set API Key/);
  assert.match(elsewhereHint(f), /OPENAI_API_KEY or OPENAI_BASE_URL/);
});

test('a missing key has no VS Code setting: the hint names the key, the command and the variables', () => {
  const f = fixPlaces(setupProblem(cases.missing_key)!);
  assert.deepEqual(f.vscode, []);
  assert.deepEqual(fixActions(f), ['Set API Key']);
  const hint = elsewhereHint(f);
  assert.match(hint, /OPENAI_API_KEY or DASHSCOPE_API_KEY/);
  assert.match(hint, /model\.apiKey in ~\/\.qwen\/settings\.json/);
  assert.equal(statusFor('no_api_key'), 'error');
});

test('no model at all: both settings, filtered by their common prefix; the status says "no model"', () => {
  const f = fixPlaces(setupProblem(cases.nothing)!);
  assert.deepEqual(f.vscode, ['qwen.model.name', 'qwen.model.baseUrl']);
  assert.equal(settingsQuery(f.vscode), 'qwen.model');
  assert.equal(statusFor('no_model'), 'no model');
  assert.equal(statusFor('no_model_name'), 'no model');
});

test('a failure with nothing to set offers no settings', () => {
  const f = fixPlaces(setupProblem(cases.other)!);
  assert.deepEqual(fixActions(f), []);
});

test('error data that is not a setup problem is ignored', () => {
  for (const d of [undefined, null, 'x', [], {}, { reason: '' }, { reason: 3 }]) assert.equal(setupProblem(d), undefined, JSON.stringify(d));
  assert.deepEqual(setupProblem({ reason: 'model_auth', settings: ['model.apiKey', 7], env: 'OPENAI_API_KEY' }), {
    reason: 'model_auth',
    settings: ['model.apiKey'],
    env: [],
  });
});

test('checkSetup results are read field by field', () => {
  assert.deepEqual(parseCheckSetup({ ok: true, message: 'qwen3 at http://x answered in 85 ms.', model: 'qwen3', baseUrl: 'http://x', latencyMs: 85, sandbox: 'landlock' }), {
    ok: true,
    message: 'qwen3 at http://x answered in 85 ms.',
    model: 'qwen3',
    baseUrl: 'http://x',
    latencyMs: 85,
    sandbox: 'landlock',
  });
  const bad = parseCheckSetup({ ok: false, message: 'Nothing is listening', model: null, baseUrl: 'http://127.0.0.1:9/v1', reason: 'model_unreachable', settings: ['model.baseUrl'], env: ['OPENAI_BASE_URL'] })!;
  assert.equal(bad.ok, false);
  assert.deepEqual(bad.settings, ['model.baseUrl']);
  assert.equal(parseCheckSetup({ ok: 'yes', message: 'x' }), undefined);
  assert.equal(parseCheckSetup(null), undefined);
});

test('session times read as relative or local, never ISO', () => {
  const now = Date.parse('2026-11-27T12:00:00Z');
  assert.equal(relativeTime('2026-11-27T11:59:40Z', now), 'just now');
  assert.equal(relativeTime('2026-11-27T11:55:00Z', now), '5 min ago');
  assert.equal(relativeTime('2026-11-27T09:00:00Z', now), '3 h ago');
  const old = relativeTime('2026-10-01T09:00:00Z', now, 'en-US');
  assert.doesNotMatch(old, /T\d\d:|Z$/);
  assert.match(old, /2026/);
  assert.equal(relativeTime('not a date', now), '');
});

test('a finished tool call: _meta.qwen.outcome first, its status otherwise', () => {
  assert.equal(toolOutcome('failed', { qwen: { outcome: 'rejected' } }), 'rejected');
  assert.equal(toolOutcome('failed', { qwen: { outcome: 'cancelled' } }), 'cancelled');
  assert.equal(toolOutcome('failed', { qwen: { outcome: 'failed' } }), 'failed');
  assert.equal(toolOutcome('completed', undefined), 'completed');
  assert.equal(toolOutcome('failed', { qwen: { outcome: 'exploded' } }), 'failed');
  assert.equal(toolOutcome('in_progress', undefined), undefined);
});

test('permission choices: every option, in order, by name; never the optionId', () => {
  const options = [
    { optionId: 'proceed_once', name: 'Allow', kind: 'allow_once' },
    { optionId: 'proceed_always', name: 'Allow `touch` for this session', kind: 'allow_always' },
    { optionId: 'proceed_always_project', name: 'Always allow in this project', kind: 'allow_always' },
    { optionId: 'proceed_always_user', name: 'Always allow everywhere', kind: 'allow_always' },
    { optionId: 'cancel', name: 'Reject', kind: 'reject_once' },
  ];
  const items = optionItems(options);
  assert.deepEqual(items.map((i) => i.optionId), options.map((o) => o.optionId));
  for (const [i, item] of items.entries()) {
    assert.ok(item.label.endsWith(options[i].name), item.label);
    assert.ok(!item.label.includes(options[i].optionId) || options[i].name.includes(options[i].optionId), item.label);
    assert.deepEqual(Object.keys(item).sort(), ['label', 'optionId']);
  }
  assert.equal(optionItems(options.slice(0, 2).concat(options.slice(3))).length, 4);
});

test('the chat may open only the extension\'s settings, and reviews by uri', () => {
  assert.ok(parseWebviewMessage({ type: 'openSettings', query: 'qwen.model.baseUrl' }));
  assert.ok(parseWebviewMessage({ type: 'openSettings', query: 'qwen.model' }));
  assert.equal(parseWebviewMessage({ type: 'openSettings', query: 'editor.fontSize' }), undefined);
  assert.equal(parseWebviewMessage({ type: 'openSettings', query: '@ext:evil' }), undefined);
  assert.ok(parseWebviewMessage({ type: 'openReview', uri: 'file:///ws/calc/calc.go' }));
  assert.ok(parseWebviewMessage({ type: 'checkSetup' }));
  assert.ok(isHostMessage({ type: 'reviews', reviews: [{ uri: 'file:///a', name: 'a', hunks: 2, isNewFile: false }] }));
  assert.equal(isHostMessage({ type: 'reviews', reviews: [{ uri: 'file:///a' }] }), false);
  assert.ok(isHostMessage({ type: 'tool', card: { id: 'c', title: 't', kind: 'execute', status: 'failed', outcome: 'cancelled' } }));
  assert.equal(isHostMessage({ type: 'tool', card: { id: 'c', title: 't', kind: 'execute', status: 'failed', outcome: 'boom' } }), false);
});

test('Check Setup reads languageServers and lspAllowed and says who answers for the open file', () => {
  const r = parseCheckSetup({
    ok: true,
    message: 'scripted answered in 3 ms',
    model: 'scripted',
    baseUrl: 'http://127.0.0.1:1/v1',
    lspAllowed: false,
    languageServers: [
      { name: 'gopls', command: 'gopls', languages: ['go'], installed: true, forFile: false },
      { name: 'typescript-language-server', command: 'typescript-language-server', languages: ['typescript', 'javascript'], installed: false, forFile: true },
      { command: 'nameless' },
    ],
  })!;
  assert.equal(r.languageServers?.length, 2);
  assert.equal(r.lspAllowed, false);
  const covered = codeIntelligenceSummary('src/main.ts', r, { languageId: 'typescript', servers: ['vscode.typescript-language-features'] });
  assert.equal(
    covered,
    "Code intelligence for src/main.ts (typescript): VS Code's own language features answer the agent for files they cover, here vscode.typescript-language-features. " +
      "qwen-ls's own language servers for it: typescript-language-server (not installed). In this untrusted folder qwen-ls starts none.",
  );
  const bare = codeIntelligenceSummary('main.go', { languageServers: [{ name: 'gopls', command: 'gopls', languages: ['go'], installed: true, forFile: true }], lspAllowed: true }, { languageId: 'go', servers: [] });
  assert.equal(bare, "Code intelligence for main.go (go): no VS Code extension covers it. qwen-ls's own language servers for it: gopls (installed).");
  // An older qwen-ls says nothing of its servers; no open file, no line.
  assert.equal(codeIntelligenceSummary('a.txt', {}, { languageId: 'plaintext', servers: [] }), 'Code intelligence for a.txt (plaintext): no VS Code extension covers it.');
  assert.equal(codeIntelligenceSummary(undefined, r, undefined), '');
});
