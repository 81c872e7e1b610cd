// ACP's session lifecycle, notices and prompt links, driven through the
// official SDK's client app with every message checked against the stable
// v1 schema.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import * as acp from "@agentclientprotocol/sdk";
import { TestClient, clientCapabilities, schemaViolations, startAgent, startModel, tempDir } from "../lib/harness.mjs";

async function start(t, { home, root, model, caps = clientCapabilities, client = new TestClient(), fdLimit = 0 }) {
  const agent = startAgent(t, { home, modelURL: model.url, client, cwd: root, fdLimit });
  t.after(() => assert.deepEqual(schemaViolations(agent), [], "every message the agent sent matches the ACP schema"));
  const init = await agent.conn.initialize({ protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: caps });
  return { agent, client, init };
}

async function env(t, opts = {}) {
  const root = tempDir(t, "qwen-acp-ws-");
  const home = tempDir(t, "qwen-acp-home-");
  const model = await startModel(t);
  return { root, home, model, ...(await start(t, { home, root, model, ...opts })) };
}

const text = (s) => [{ type: "text", text: s }];

// fds counts the descriptors process pid holds open.
function fds(pid) {
  return readdirSync(`/proc/${pid}/fd`).length;
}

test("initialize advertises sessionCapabilities: list, additionalDirectories, resume, close, delete", async (t) => {
  const e = await env(t);
  const caps = e.init.agentCapabilities.sessionCapabilities;
  for (const k of ["list", "additionalDirectories", "resume", "close", "delete"]) assert.deepEqual(caps?.[k], {}, k);
  assert.equal(e.init.agentCapabilities.loadSession, true);
});

test("a session made in one process is resumed and loaded by the next; an unknown one is -32002", async (t) => {
  const e = await env(t);
  const { sessionId } = await e.agent.conn.newSession({ cwd: e.root, mcpServers: [] });
  await e.agent.stop();

  const second = await start(t, e);
  const resumed = await second.agent.conn.resumeSession({ sessionId, cwd: e.root, mcpServers: [] });
  assert.equal(resumed.modes.currentModeId, "default");
  await e.model.script("-- 01.response --\ntext: hello again\n", e.root);
  const res = await second.agent.conn.prompt({ sessionId, prompt: text("Fix the build\nmore") });
  assert.equal(res.stopReason, "end_turn");
  const info = second.client.updatesOf("session_info_update");
  assert.equal(info.at(-1)?.title, "Fix the build", JSON.stringify(info));
  await second.agent.stop();

  const third = await start(t, e);
  await third.agent.conn.loadSession({ sessionId, cwd: e.root, mcpServers: [] });
  assert.ok(third.client.updatesOf("user_message_chunk").some((u) => u.content.text.includes("Fix the build")));
  for (const call of ["loadSession", "resumeSession"]) {
    await assert.rejects(third.agent.conn[call]({ sessionId: "000000000000000000000000", cwd: e.root, mcpServers: [] }),
      (err) => err.code === -32002, call);
  }
});

test("session/close ends the session, session/delete removes it from session/list, logout answers", async (t) => {
  const e = await env(t);
  const { sessionId } = await e.agent.conn.newSession({ cwd: e.root, mcpServers: [] });
  await e.model.script("-- 01.response --\ntext: ok\n", e.root);
  await e.agent.conn.prompt({ sessionId, prompt: text("first") });
  await e.agent.conn.closeSession({ sessionId });
  await assert.rejects(e.agent.conn.prompt({ sessionId, prompt: text("after close") }));
  assert.ok((await e.agent.conn.listSessions({ cwd: e.root })).sessions.some((s) => s.sessionId === sessionId), "a closed session is still stored");
  await e.agent.conn.deleteSession({ sessionId });
  assert.ok(!(await e.agent.conn.listSessions({ cwd: e.root })).sessions.some((s) => s.sessionId === sessionId), "a deleted session is gone");
  await e.agent.conn.logout({});
});

test("a refused fs/read_text_file is reported to the model, and the disk is not read", async (t) => {
  const e = await env(t);
  const secret = join(e.root, "secret.txt");
  writeFileSync(secret, "disk-only-secret\n");
  e.client.readTextFile = async () => { throw new acp.RequestError(-32000, "reads of secret.txt are denied by policy"); };
  const { sessionId } = await e.agent.conn.newSession({ cwd: e.root, mcpServers: [] });
  await e.model.script(`
-- 01.response --
call[id=r1]: read_file {"absolute_path":"$ROOT/secret.txt"}
-- 02.response --
text: ok
`, e.root);
  await e.agent.conn.prompt({ sessionId, prompt: text("read the secret") });
  const told = JSON.stringify(await e.model.requests());
  assert.doesNotMatch(told, /disk-only-secret/);
  assert.match(told, /refused[^"]*denied by policy/);
  assert.equal(e.client.toolCall("r1").status, "failed");
});

test("a resource_link attaches the file's text, set off from the prompt's text", async (t) => {
  const e = await env(t);
  const path = join(e.root, "spec.md");
  writeFileSync(path, "# The spec\nEverything in it.\n");
  const { sessionId } = await e.agent.conn.newSession({ cwd: e.root, mcpServers: [] });
  await e.model.script("-- 01.response --\ntext: ok\n", e.root);
  await e.agent.conn.prompt({ sessionId, prompt: [
    { type: "text", text: "follow" },
    { type: "resource_link", uri: pathToFileURL(path).href, name: "spec.md" },
    { type: "text", text: "closely" },
  ] });
  const [req] = await e.model.requests();
  const user = JSON.stringify(req.messages.at(-1));
  assert.ok(user.includes(`follow @${path} closely`), user);
  assert.ok(user.includes("Everything in it."), user);
});

test("the untrusted-folder notice is a notice update for a client that takes them", async (t) => {
  const root = tempDir(t, "qwen-acp-ws-");
  const home = tempDir(t, "qwen-acp-home-");
  mkdirSync(join(root, ".qwen"));
  writeFileSync(join(root, ".qwen", "settings.json"), JSON.stringify({ tools: { approvalMode: "yolo" } }));
  const model = await startModel(t);
  const e = await start(t, { home, root, model, caps: { ...clientCapabilities, session: { notices: {} } } });
  const { sessionId } = await e.agent.conn.newSession({ cwd: root, mcpServers: [] });
  await model.script("-- 01.response --\ntext: hi\n", root);
  await e.agent.conn.prompt({ sessionId, prompt: text("hello") });
  const notices = e.client.updatesOf("notice");
  assert.equal(notices.length, 1, JSON.stringify(e.client.updates));
  assert.equal(notices[0].severity, "warning");
  assert.match(notices[0].description, /qwen-ls trust/);
  assert.equal(e.client.updatesOf("agent_message_chunk").map((u) => u.content.text).join(""), "hi");
});

test("500 sessions opened and closed in one agent keep its descriptors flat", async (t) => {
  const e = await env(t, { caps: {} });
  const n = 500;
  await e.model.script(Array.from({ length: n }, (_, i) => `-- ${String(i + 1).padStart(3, "0")}.response --\ntext: ok\n`).join(""), e.root);
  let at50 = 0;
  for (let i = 1; i <= n; i++) {
    const { sessionId } = await e.agent.conn.newSession({ cwd: e.root, mcpServers: [] });
    await e.agent.conn.prompt({ sessionId, prompt: text(`task ${i}`) });
    await e.agent.conn.closeSession({ sessionId });
    if (i === 50) at50 = fds(e.agent.proc.pid);
  }
  const end = fds(e.agent.proc.pid);
  console.log(`# agent descriptors: ${at50} after 50 sessions, ${end} after ${n}`);
  assert.ok(end <= at50 + 4, `descriptors grew from ${at50} to ${end}`);
});

test("with a 64-file limit, 120 sessions left open all take prompts", async (t) => {
  const e = await env(t, { caps: {}, fdLimit: 64 });
  const n = 120;
  await e.model.script(Array.from({ length: n }, (_, i) => `-- ${String(i + 1).padStart(3, "0")}.response --\ntext: ok\n`).join(""), e.root);
  for (let i = 1; i <= n; i++) {
    const { sessionId } = await e.agent.conn.newSession({ cwd: e.root, mcpServers: [] });
    const res = await e.agent.conn.prompt({ sessionId, prompt: text(`task ${i}`) });
    assert.equal(res.stopReason, "end_turn", `session ${i}`);
  }
  console.log(`# agent descriptors with ${n} open sessions: ${fds(e.agent.proc.pid)}`);
  assert.equal((await e.agent.conn.listSessions({ cwd: e.root })).sessions.length, n);
});
