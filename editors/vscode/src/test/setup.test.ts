import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  codeIntelligenceSummary,
  endpointReachable,
  fixActions,
  fixPlaces,
  isMissing,
  parseCheckSetup,
  settingsQuery,
  setupProblem,
  setupText,
  toolOutcome,
} from '../setup';
import { isHostMessage, parseWebviewMessage } from '../chat/protocol';

// The error.data of the contract's table, as the server sends it.
const cases = {
  dead_url: { reason: 'model_unreachable', settings: ['model.baseUrl'], env: ['OPENAI_BASE_URL'], baseUrl: 'http://127.0.0.1:9/v1' },
  name_only: { reason: 'no_endpoint', settings: ['model.baseUrl', 'model.apiKey'], env: ['OPENAI_API_KEY', 'OPENAI_BASE_URL'], model: 'qwen3-coder-plus' },
  missing_key: { reason: 'no_api_key', settings: ['model.apiKey'], env: ['OPENAI_API_KEY', 'DASHSCOPE_API_KEY'], baseUrl: 'https://example.invalid/v1' },
  nothing: { reason: 'no_model', settings: ['model.name', 'model.baseUrl'], env: ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_MODEL'] },
  other: { reason: 'model_error', settings: [], env: [] },
};

/** No server spelling in a VS Code message: settings.json keys without "qwen.", OPENAI_* variables, ~/.qwen/settings.json. */
function assertVsCodeWords(message: string): void {
  assert.doesNotMatch(message, /(^|[^.\w])model\.(name|baseUrl|apiKey)/, message);
  assert.doesNotMatch(message, /OPENAI_|DASHSCOPE_/, message);
  assert.doesNotMatch(message, /settings\.json/, message);
}

test('a dead base URL opens qwen.model.baseUrl and says so in VS Code words', () => {
  const p = setupProblem(cases.dead_url)!;
  assert.equal(p.reason, 'model_unreachable');
  const f = fixPlaces(p);
  assert.deepEqual(f.vscode, ['qwen.model.baseUrl']);
  assert.equal(settingsQuery(f.vscode), 'qwen.model.baseUrl');
  assert.deepEqual(fixActions(f, p), ['Open Settings']);
  const t = setupText(p, 'Nothing answers at http://127.0.0.1:9/v1 (connection refused). Start the model server, or set model.baseUrl (or OPENAI_BASE_URL).');
  assert.equal(t.status, 'model unreachable');
  assert.equal(t.message, 'Nothing answers at http://127.0.0.1:9/v1: start the model server, or set qwen.model.baseUrl to an endpoint that runs.');
  assertVsCodeWords(t.message);
  assert.equal(isMissing(p.reason), false);
});

test('a model name alone: the status says "no endpoint", the message names qwen.model.baseUrl and Set API Key', () => {
  const p = setupProblem(cases.name_only)!;
  const f = fixPlaces(p);
  assert.deepEqual(f.vscode, ['qwen.model.baseUrl']);
  assert.deepEqual(f.elsewhere, ['model.apiKey']);
  assert.deepEqual(fixActions(f, p), ['Open Settings', 'Set API Key']);
  const t = setupText(p, 'The model name is qwen3-coder-plus, but there is no endpoint or API key to reach it: set OPENAI_API_KEY …');
  assert.equal(t.status, 'no endpoint');
  assert.match(t.message, /^The model qwen3-coder-plus has no endpoint and no API key: set qwen\.model\.baseUrl/);
  assert.match(t.message, /"Qwen: Set API Key"/);
  assertVsCodeWords(t.message);
  assert.ok(isMissing(p.reason));
});

test('a missing key: "no API key", the endpoint, and Set API Key; an envKey of its own is named', () => {
  const p = setupProblem(cases.missing_key)!;
  const f = fixPlaces(p);
  assert.deepEqual(f.vscode, []);
  assert.deepEqual(fixActions(f, p), ['Set API Key']);
  const t = setupText(p, 'server words');
  assert.equal(t.status, 'no API key');
  assert.equal(t.message, 'https://example.invalid/v1 needs an API key: run "Qwen: Set API Key".');
  assertVsCodeWords(t.message);
  // A modelProviders entry whose envKey is unset: only that variable helps.
  const own = setupProblem({ reason: 'no_api_key', settings: ['env.DASHSCOPE_API_KEY'], env: ['DASHSCOPE_API_KEY'], model: 'qwen3-coder-plus' })!;
  assert.deepEqual(fixActions(fixPlaces(own), own), []);
  assert.match(setupText(own, '').message, /takes its key from DASHSCOPE_API_KEY, which is not set/);
  const openai = setupProblem({ reason: 'no_api_key', settings: ['env.OPENAI_API_KEY'], env: ['OPENAI_API_KEY'] })!;
  assert.deepEqual(fixActions(fixPlaces(openai), openai), ['Set API Key']);
  // A refused key.
  const refused = setupText({ reason: 'model_auth', settings: ['model.apiKey'], env: [], baseUrl: 'https://x.invalid/v1' }, '');
  assert.equal(refused.status, 'API key refused');
  assertVsCodeWords(refused.message);
});

test('"no model" only when nothing is configured; a missing name says "no model name"', () => {
  const p = setupProblem(cases.nothing)!;
  const f = fixPlaces(p);
  assert.deepEqual(f.vscode, ['qwen.model.name', 'qwen.model.baseUrl']);
  assert.equal(settingsQuery(f.vscode), 'qwen.model');
  const t = setupText(p, '');
  assert.equal(t.status, 'no model');
  assert.match(t.message, /qwen\.model\.name and qwen\.model\.baseUrl/);
  assertVsCodeWords(t.message);
  const name = setupText({ reason: 'no_model_name', settings: ['model.name'], env: ['OPENAI_MODEL'], baseUrl: 'http://127.0.0.1:11434/v1' }, '');
  assert.equal(name.status, 'no model name');
  assert.equal(name.message, 'The endpoint http://127.0.0.1:11434/v1 is set, but no model name: set qwen.model.name.');
  const notFound = setupText({ reason: 'model_not_found', settings: ['model.name', 'model.baseUrl'], env: [], baseUrl: 'http://h/v1', model: 'm' }, '');
  assert.equal(notFound.status, 'model not found');
  assertVsCodeWords(notFound.message);
  // Anything else keeps the server's own message.
  assert.deepEqual(setupText({ reason: 'model_error', settings: [], env: [] }, 'The endpoint answered 500 three times.'), { status: 'error', message: 'The endpoint answered 500 three times.' });
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

test('a finished tool call: _meta.qwen.outcome first, its status otherwise', () => {
  assert.equal(toolOutcome('failed', { qwen: { outcome: 'rejected' } }), 'rejected');
  assert.equal(toolOutcome('failed', { qwen: { outcome: 'cancelled' } }), 'cancelled');
  assert.equal(toolOutcome('failed', { qwen: { outcome: 'failed' } }), 'failed');
  assert.equal(toolOutcome('completed', undefined), 'completed');
  assert.equal(toolOutcome('failed', { qwen: { outcome: 'exploded' } }), 'failed');
  assert.equal(toolOutcome('in_progress', undefined), undefined);
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

test('what VS Code can see reaches a model as qwen-ls judges it: a key, or a loopback base URL', () => {
  assert.equal(endpointReachable('', true), true);
  assert.equal(endpointReachable('', false), false);
  assert.equal(endpointReachable('http://127.0.0.1:11434/v1', false), true);
  assert.equal(endpointReachable('http://localhost:8000/v1', false), true);
  assert.equal(endpointReachable('http://[::1]:8000/v1', false), true);
  assert.equal(endpointReachable('http://127.0.0.2:8000/v1', false), false);
  assert.equal(endpointReachable('https://model.example.invalid/v1', false), false);
  assert.equal(endpointReachable('https://model.example.invalid/v1', true), true);
  assert.equal(endpointReachable('', false, 'http://127.0.0.1:1/v1'), true);
  assert.equal(endpointReachable('not a url', false), false);
});
