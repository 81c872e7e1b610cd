// The session list: the time a person reads, and the folder only when it
// is not this workspace's.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { sessionItem, sessionTime } from '../sessions';

test('session times: minutes within the hour, then the clock time, never ISO', () => {
  // Local times, so that "today" and "yesterday" are those of this machine's zone.
  const now = new Date(2026, 10, 27, 15, 0, 0).getTime();
  const at = (d: number, h: number, m: number) => new Date(2026, 10, d, h, m, 0).toISOString();
  assert.equal(sessionTime(new Date(now - 20_000).toISOString(), now), 'just now');
  assert.equal(sessionTime(new Date(now - 5 * 60_000).toISOString(), now), '5 min ago');
  assert.match(sessionTime(at(27, 9, 5), now, 'en-GB'), /^today 09:05$/);
  assert.match(sessionTime(at(26, 23, 30), now, 'en-GB'), /^yesterday 23:30$/);
  assert.match(sessionTime(at(24, 8, 0), now, 'en-GB'), /^Tue 08:00$/);
  const old = sessionTime(at(1, 10, 0).replace('-11-', '-10-'), now, 'en-GB');
  assert.doesNotMatch(old, /T\d\d:|Z$/);
  assert.match(old, /2026, \d\d:\d\d$/);
  assert.equal(sessionTime('not a date', now), '');
});

test('a session row: title, time and "current"; the folder only when it is not the workspace', () => {
  const now = Date.parse('2026-11-27T12:00:00Z');
  const s = { sessionId: 's1', cwd: '/home/me/proj', title: 'Tidy the calc package', updatedAt: '2026-11-27T11:58:00Z' };
  assert.deepEqual(sessionItem(s, { roots: ['/home/me/proj/'], now }), { label: 'Tidy the calc package', description: '2 min ago', sessionId: 's1' });
  assert.deepEqual(sessionItem(s, { roots: ['/home/me/proj'], now, currentId: 's1' }).description, '2 min ago · current');
  assert.equal(sessionItem(s, { roots: ['/home/me/other'], now }).detail, 'in /home/me/proj');
  assert.equal(sessionItem({ ...s, title: '' }, { roots: [], now }).label, '(untitled)');
  assert.equal(sessionItem({ ...s, cwd: 'C:\\Work\\Proj' }, { roots: ['c:\\work\\proj\\'], now, platform: 'win32' }).detail, undefined);
});
