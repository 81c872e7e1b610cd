// The rules every question follows (src/question.ts): typing holds a
// notification back, only the card's own keys choose, every option is
// offered by name in the server's order, and the chat's messages about
// questions are checked like every other.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { answeredText, notificationButtons, notificationText, optionForKey, showInChat, typingQuietMs, typingWait } from '../question';
import { isHostMessage, parseWebviewMessage } from '../chat/protocol';

const options = [
  { optionId: 'proceed_once', name: 'Allow', kind: 'allow_once' },
  { optionId: 'proceed_always', name: 'Allow touch for this session', kind: 'allow_always' },
  { optionId: 'proceed_always_project', name: 'Always allow in this project: Bash(touch x)', kind: 'allow_always' },
  { optionId: 'proceed_always_user', name: 'Always allow for this user: Bash(touch x)', kind: 'allow_always' },
  { optionId: 'cancel', name: 'Reject', kind: 'reject_once' },
];

test('typing: a notification waits until 1.5 s have passed without a text change', () => {
  assert.equal(typingQuietMs, 1500);
  assert.equal(typingWait(undefined, 10_000), 0, 'never typed: ask at once');
  assert.equal(typingWait(10_000, 10_000), 1500, 'typed this instant: a full period');
  assert.equal(typingWait(10_000, 10_400), 1100);
  assert.equal(typingWait(10_000, 11_500), 0);
  assert.equal(typingWait(10_000, 60_000), 0);
  assert.equal(typingWait(10_000, 9_000), 1500, 'a clock step back waits a full period');
});

test('the card\'s keys: 1–9 choose that option, nothing else does', () => {
  assert.equal(optionForKey('1', options)?.optionId, 'proceed_once');
  assert.equal(optionForKey('5', options)?.optionId, 'cancel');
  assert.equal(optionForKey('6', options), undefined);
  assert.equal(optionForKey('0', options), undefined);
  for (const key of ['Enter', ' ', 'y', 'a', 'A', 'Escape', 'Tab', 'ArrowDown', '12']) assert.equal(optionForKey(key, options), undefined, key);
  assert.equal(optionForKey('1', options, { ctrl: true }), undefined);
  assert.equal(optionForKey('1', options, { alt: true }), undefined);
  assert.equal(optionForKey('1', options, { meta: true }), undefined);
});

test('the notification offers Allow and Reject by name, then Show in Chat; never an optionId', () => {
  // Five choices: the one that allows once, the one that rejects, and the card for the rest.
  assert.deepEqual(notificationButtons(options), ['Allow', 'Reject', showInChat]);
  const plan = [
    { optionId: 'proceed_always', name: 'Yes, and auto-accept edits', kind: 'allow_always' },
    { optionId: 'proceed_once', name: 'Yes, and manually approve edits', kind: 'allow_once' },
    { optionId: 'cancel', name: 'No, keep planning', kind: 'reject_once' },
  ];
  assert.deepEqual(notificationButtons(plan), ['Yes, and manually approve edits', 'No, keep planning', showInChat]);
  // Three short choices (the folder-trust question, without kinds): all, in order.
  const trust = [
    { optionId: '0', name: 'Trust this folder', kind: '' },
    { optionId: '1', name: 'Not now', kind: '' },
    { optionId: '2', name: "Don't trust", kind: '' },
  ];
  assert.deepEqual(notificationButtons(trust), ['Trust this folder', 'Not now', "Don't trust", showInChat]);
  assert.deepEqual(notificationButtons(trust.slice(0, 2)), ['Trust this folder', 'Not now', showInChat]);
  // Four, or long names: the first and the last.
  const four = ['A', 'B', 'C', 'D'].map((name, i) => ({ optionId: String(i), name, kind: '' }));
  assert.deepEqual(notificationButtons(four), ['A', 'D', showInChat]);
  for (const b of notificationButtons(options)) assert.ok(!/proceed_|^cancel$/.test(b), b);
  // A repeated name keeps one button: an answer is found by its label.
  assert.deepEqual(notificationButtons([options[0], { ...options[4], name: 'Allow' }]), ['Allow', showInChat]);
});

test('the notification says what is asked, on one line, cut when long, and how many choices the card has', () => {
  assert.equal(notificationText({ title: 'Confirm shell command', subject: 'touch a &&\n  echo b' }), 'Qwen asks: Confirm shell command: touch a && ⏎ echo b');
  assert.equal(notificationText({ title: 'Trust?', subject: '' }), 'Qwen asks: Trust?');
  assert.equal(notificationText({ title: '', subject: 'qwen-ls: the folder /x is not trusted' }), 'Qwen asks: qwen-ls: the folder /x is not trusted');
  assert.equal(notificationText({ title: 'Run?', subject: 'ls', options }), 'Qwen asks: Run?: ls (5 choices in the chat)');
  const long = notificationText({ title: 't', subject: 'x'.repeat(1000) });
  assert.ok(long.length < 330 && long.endsWith('…'), long);
});

test('the card says how a question ended', () => {
  assert.equal(answeredText(options[4]), 'You chose: Reject');
  assert.match(answeredText(undefined), /turn stopped/);
});

test('question messages: the chat answers with an id and an optionId, nothing more', () => {
  assert.deepEqual(parseWebviewMessage({ type: 'answer', id: 'q1', optionId: 'proceed_once' }), { type: 'answer', id: 'q1', optionId: 'proceed_once' });
  assert.equal(parseWebviewMessage({ type: 'answer', id: 'q1' }), undefined);
  assert.equal(parseWebviewMessage({ type: 'answer', id: '', optionId: 'x' }), undefined);
  assert.equal(parseWebviewMessage({ type: 'answer', id: 'q1', optionId: 'x', always: true }), undefined);
  const question = { id: 'q1', toolCallId: 'call_1', title: 'Confirm shell command', subject: 'touch x', kind: 'execute', options };
  assert.ok(isHostMessage({ type: 'question', question }));
  assert.ok(isHostMessage({ type: 'question', question: { ...question, toolCallId: null } }));
  assert.equal(isHostMessage({ type: 'question', question: { ...question, options: [] } }), false);
  assert.equal(isHostMessage({ type: 'question', question: { ...question, options: [{ optionId: 'a' }] } }), false);
  assert.ok(isHostMessage({ type: 'questionDone', id: 'q1', text: 'You chose: Allow' }));
  assert.ok(isHostMessage({ type: 'focusQuestion', id: 'q1' }));
});
