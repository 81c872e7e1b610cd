// qwen-ls --acp driven as an ACP editor drives it: the official SDK's
// client app on the agent's stdio, a real scripted model, real
// files and real terminal processes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { TestClient, clientCapabilities, schemaViolations, startAgent, startModel, tempDir, withTimeout } from "../lib/harness.mjs";

// setup starts the model, a workspace and the agent, and initializes.
async function setup(t, { caps = clientCapabilities, model = true, trusted = false } = {}) {
  const root = tempDir(t, "qwen-acp-ws-");
  const home = tempDir(t, "qwen-acp-home-");
  if (trusted) {
    // The user's trust list names the workspace, as `qwen-ls trust` writes it.
    mkdirSync(join(home, ".qwen"), { recursive: true });
    writeFileSync(join(home, ".qwen", "trustedFolders.json"), JSON.stringify({ [realpathSync(root)]: "TRUST_FOLDER" }));
  }
  const m = model ? await startModel(t) : null;
  const client = new TestClient();
  const agent = startAgent(t, { home, modelURL: m?.url ?? null, client, cwd: root });
  t.after(() => assert.deepEqual(schemaViolations(agent), [], "every message the agent sent matches the ACP schema"));
  const init = await agent.conn.initialize({ protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: caps });
  return { root, home, model: m, client, agent, init };
}

async function newSession(env) {
  const res = await env.agent.conn.newSession({ cwd: env.root, mcpServers: [] });
  return res.sessionId;
}

function prompt(env, sessionId, text) {
  return env.agent.conn.prompt({ sessionId, prompt: [{ type: "text", text }] });
}

// livingInGroup lists the processes of process group pgid that are not
// zombies (an exited child may wait for a reaper that a container lacks).
function livingInGroup(pgid) {
  const out = [];
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z") out.push(Number(pid));
  }
  return out;
}

// toolMessage is what the model was told about a tool call.
async function toolMessage(env, callId) {
  for (const req of await env.model.requests()) {
    for (const m of req.messages) {
      if (m.role === "tool" && m.tool_call_id === callId) return typeof m.content === "string" ? m.content : JSON.stringify(m.content);
    }
  }
  return undefined;
}

test("initialize negotiates version 1 and states the agent's capabilities", async (t) => {
  const env = await setup(t);
  assert.equal(env.init.protocolVersion, 1);
  assert.deepEqual(env.init.authMethods, []);
  const caps = env.init.agentCapabilities;
  assert.equal(caps.promptCapabilities.embeddedContext, true);
  assert.equal(typeof caps.loadSession, "boolean");
  assert.equal(caps.mcpCapabilities.http, true);
  assert.equal(env.init.agentInfo.name, "qwen-ls");
});

test("a client of a newer protocol version is answered with version 1", async (t) => {
  const home = tempDir(t, "qwen-acp-home-");
  const agent = startAgent(t, { home, modelURL: null, client: new TestClient(), cwd: home });
  const init = await agent.conn.initialize({ protocolVersion: 99, clientCapabilities: {} });
  assert.equal(init.protocolVersion, 1);
  assert.deepEqual(schemaViolations(agent), []);
});

test("session/new without a model fails with what to set", async (t) => {
  const env = await setup(t, { model: false });
  await assert.rejects(env.agent.conn.newSession({ cwd: env.root, mcpServers: [] }), (err) => {
    assert.equal(err.code, -32000);
    assert.match(err.message, /OPENAI_MODEL|model\.name|OPENAI_API_KEY/);
    return true;
  });
});

test("session/new gives a session with the four approval modes", async (t) => {
  const env = await setup(t);
  const res = await env.agent.conn.newSession({ cwd: env.root, mcpServers: [] });
  assert.match(res.sessionId, /\S/);
  assert.equal(res.modes.currentModeId, "default");
  assert.deepEqual(res.modes.availableModes.map((m) => m.id).sort(), ["auto-edit", "default", "plan", "yolo"]);
  await assert.rejects(env.agent.conn.newSession({ cwd: "relative/dir", mcpServers: [] }), (err) => err.code === -32602);
});

test("read_file is served by fs/read_text_file from text only the client has", async (t) => {
  const env = await setup(t);
  const sid = await newSession(env);
  const path = join(env.root, "notes.txt");
  env.client.buffers.set(path, "unsaved line one\nunsaved line two\n");
  await env.model.script(`
-- 01.response --
reasoning: The notes are open in the editor.
call[id=r1]: read_file {"absolute_path":"$ROOT/notes.txt"}
usage: 1200 30
-- 02.response --
text: I read it.
usage: 1300 10
`, env.root);
  const res = await prompt(env, sid, "read notes.txt");
  assert.equal(res.stopReason, "end_turn");
  assert.deepEqual(res.usage, { inputTokens: 2500, outputTokens: 40, totalTokens: 2540 }, "the turn's usage, summed over its model requests");
  assert.ok(env.client.reads.includes(path), `fs/read_text_file asked for ${path}: ${env.client.reads}`);
  assert.equal(existsSync(path), false, "the file exists only in the client");
  assert.match(await toolMessage(env, "r1"), /unsaved line one\nunsaved line two/);
  const call = env.client.toolCall("r1");
  assert.equal(call.kind, "read");
  assert.equal(call.status, "completed");
  assert.deepEqual(call.locations, [{ path, line: 1 }], "locations are absolute paths with 1-based lines");
  assert.deepEqual(call.rawInput, { absolute_path: path });
  assert.ok(call.rawOutput, "the finished call carries rawOutput");
  assert.equal(env.client.updatesOf("agent_message_chunk").map((u) => u.content.text).join(""), "I read it.");
  assert.equal(env.client.updatesOf("agent_thought_chunk").map((u) => u.content.text).join(""), "The notes are open in the editor.");
  const usage = env.client.updatesOf("usage_update");
  assert.ok(usage.length >= 1 && usage.every((u) => u.size > 0 && u.used > 0), JSON.stringify(usage));
});

test("grep finds the client's text once the client has sent it", async (t) => {
  const env = await setup(t);
  const sid = await newSession(env);
  const path = join(env.root, "draft.txt");
  writeFileSync(path, "saved text\n");
  env.client.buffers.set(path, "saved text\nneedle typed but not saved\n");
  await env.model.script(`
-- 01.response --
call[id=g1]: grep_search {"pattern":"needle"}
-- 02.response --
call[id=r1]: read_file {"absolute_path":"$ROOT/draft.txt"}
-- 03.response --
call[id=g2]: grep_search {"pattern":"needle"}
-- 04.response --
text: found
`, env.root);
  await prompt(env, sid, "find the needle");
  assert.doesNotMatch(await toolMessage(env, "g1"), /draft\.txt/, "before the read, grep sees the disk only");
  assert.match(await toolMessage(env, "g2"), /draft\.txt[\s\S]*needle typed but not saved/, "after it, the client's text");
});

test("a read of a file the client does not have says it does not exist", async (t) => {
  const env = await setup(t);
  const sid = await newSession(env);
  await env.model.script(`
-- 01.response --
call[id=r1]: read_file {"absolute_path":"$ROOT/missing.txt"}
-- 02.response --
text: ok
`, env.root);
  await prompt(env, sid, "read missing.txt");
  assert.match(await toolMessage(env, "r1"), /does not exist/);
  assert.equal(env.client.toolCall("r1").status, "failed");
});

// editScript reads a.txt and replaces beta with BETA.
const editScript = `
-- 01.response --
call[id=r1]: read_file {"absolute_path":"$ROOT/a.txt"}
-- 02.response --
call[id=e1]: edit {"file_path":"$ROOT/a.txt","old_string":"beta","new_string":"BETA"}
-- 03.response --
text: done
`;

test("an edit is a permission request with the whole-file diff, written through fs/write_text_file", async (t) => {
  const env = await setup(t);
  const sid = await newSession(env);
  const path = join(env.root, "a.txt");
  writeFileSync(path, "alpha\nbeta\n");
  const unsaved = "alpha\nbeta\ngamma (unsaved)\n";
  env.client.buffers.set(path, unsaved);
  await env.model.script(editScript, env.root);
  const res = await prompt(env, sid, "edit a.txt");
  assert.equal(res.stopReason, "end_turn");

  assert.equal(env.client.permissions.length, 1);
  const ask = env.client.permissions[0];
  assert.equal(ask.sessionId, sid);
  assert.equal(ask.toolCall.toolCallId, "e1");
  assert.equal(ask.toolCall.kind, "edit");
  assert.deepEqual(ask.toolCall.content, [{ type: "diff", path, oldText: unsaved, newText: "alpha\nBETA\ngamma (unsaved)\n" }]);
  assert.deepEqual(ask.options.map((o) => o.kind).sort(), ["allow_always", "allow_once", "reject_once"]);

  assert.deepEqual(env.client.writes, [{ sessionId: sid, path, content: "alpha\nBETA\ngamma (unsaved)\n" }]);
  assert.equal(readFileSync(path, "utf8"), "alpha\nbeta\n", "the disk is left to the client");
  assert.match(await toolMessage(env, "e1"), /^Edited .*a\.txt\. The editor holds the change but has not saved it to disk yet/);
  const call = env.client.toolCall("e1");
  assert.equal(call.status, "completed");
  assert.ok(call.contents.some((c) => c.type === "diff" && c.path === path));
});

test("a rejected edit writes nothing and tells the model", async (t) => {
  const env = await setup(t);
  const sid = await newSession(env);
  const path = join(env.root, "a.txt");
  writeFileSync(path, "alpha\nbeta\n");
  env.client.permission = () => "reject_once";
  await env.model.script(editScript, env.root);
  const res = await prompt(env, sid, "edit a.txt");
  assert.equal(res.stopReason, "end_turn");
  assert.equal(env.client.permissions.length, 1);
  assert.deepEqual(env.client.writes, []);
  assert.equal(readFileSync(path, "utf8"), "alpha\nbeta\n");
  const call = env.client.toolCall("e1");
  assert.equal(call.status, "failed");
  // What the model reads is shown once, as the content, not repeated in
  // rawOutput.
  const shown = (call.content ?? []).map((c) => c.content?.text ?? "").join("\n");
  assert.match(shown, /rejected the proposed change/, "what the model will read");
  assert.equal(call.rawOutput, undefined);
  assert.equal(call._meta?.qwen?.outcome, "rejected");
});

test("without fs capabilities an accepted edit is written to the disk", async (t) => {
  const env = await setup(t, { caps: {} });
  const sid = await newSession(env);
  const path = join(env.root, "a.txt");
  writeFileSync(path, "alpha\nbeta\n");
  await env.model.script(editScript, env.root);
  await prompt(env, sid, "edit a.txt");
  assert.deepEqual(env.client.reads, []);
  assert.deepEqual(env.client.writes, []);
  assert.equal(readFileSync(path, "utf8"), "alpha\nBETA\n");
});

test("a shell command runs in the client's terminal, embedded in the tool call", async (t) => {
  const env = await setup(t);
  const sid = await newSession(env);
  mkdirSync(join(env.root, "sub"));
  await env.model.script(`
-- 01.response --
call[id=s1]: run_shell_command {"command":"echo hello-from-terminal; pwd; exit 3","directory":"sub"}
-- 02.response --
text: ran it
`, env.root);
  const res = await prompt(env, sid, "run it");
  assert.equal(res.stopReason, "end_turn");
  assert.equal(env.client.permissions.length, 1, "the command was confirmed first");
  assert.equal(env.client.permissions[0].toolCall.kind, "execute");
  const create = env.client.terminalCalls.find((c) => c.method === "create");
  assert.ok(create, "terminal/create was called");
  assert.equal(create.sessionId, sid);
  assert.equal(create.cwd, join(env.root, "sub"));
  const term = env.client.terminals.get(create.terminalId);
  assert.deepEqual(term.exit, { exitCode: 3, signal: null });
  assert.ok(term.released, "the terminal was released");
  const call = env.client.toolCall("s1");
  assert.ok(call.contents.some((c) => c.type === "terminal" && c.terminalId === create.terminalId), JSON.stringify(call.contents));
  const told = await toolMessage(env, "s1");
  assert.match(told, /hello-from-terminal/);
  assert.match(told, new RegExp(`${join(env.root, "sub")}`));
  assert.match(told, /Exit Code: 3/);
});

test("session/cancel during a terminal command ends the turn cancelled with the process gone", async (t) => {
  const env = await setup(t);
  const sid = await newSession(env);
  await env.model.script(`
-- 01.response --
call[id=s1]: run_shell_command {"command":"sleep 60; echo never"}
-- 02.response --
text: should not be asked
`, env.root);
  const turn = prompt(env, sid, "run a long command");
  await env.client.waitFor((c) => c.terminals.size === 1, "the terminal to start");
  const [term] = env.client.terminals.values();
  await env.agent.conn.cancel({ sessionId: sid });
  const res = await withTimeout(turn, 5000, "the cancelled turn to end");
  assert.equal(res.stopReason, "cancelled");
  await env.client.waitFor(() => term.released, "the terminal to be released");
  assert.ok(env.client.terminalCalls.some((c) => c.method === "kill" && c.terminalId === term.id), "terminal/kill was sent");
  await withTimeout(term.exited, 5000, "the process to exit");
  await env.client.waitFor(() => livingInGroup(term.pid).length === 0, "no living process left in the command's group", 5000);
  assert.equal((await env.model.requests()).length, 1, "the model was not asked again after the cancel");
});

test("session/cancel while a permission request is open ends the turn cancelled", async (t) => {
  const env = await setup(t);
  const sid = await newSession(env);
  let answer;
  env.client.permission = () => new Promise((resolve) => { answer = resolve; });
  await env.model.script(`
-- 01.response --
call[id=s1]: run_shell_command {"command":"touch never.txt"}
-- 02.response --
text: should not be asked
`, env.root);
  const turn = prompt(env, sid, "run");
  await env.client.waitFor((c) => c.permissions.length === 1, "the permission request");
  await env.agent.conn.cancel({ sessionId: sid });
  const res = await withTimeout(turn, 5000, "the cancelled turn to end");
  assert.equal(res.stopReason, "cancelled");
  answer({ optionId: "proceed_once" }); // too late: nothing may run
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(existsSync(join(env.root, "never.txt")), false);
  assert.equal(env.client.terminals.size, 0);
  assert.equal((await env.model.requests()).length, 1);
});

test("session/set_mode switches the approval mode and reports it", async (t) => {
  const env = await setup(t);
  const sid = await newSession(env);
  await env.agent.conn.setSessionMode({ sessionId: sid, modeId: "yolo" });
  await env.client.waitFor((c) => c.updatesOf("current_mode_update").some((u) => u.currentModeId === "yolo"), "current_mode_update");
  await env.model.script(`
-- 01.response --
call[id=s1]: run_shell_command {"command":"echo yolo"}
-- 02.response --
text: ran
`, env.root);
  await prompt(env, sid, "run");
  assert.equal(env.client.permissions.length, 0, "yolo asks nothing");
  assert.match(await toolMessage(env, "s1"), /yolo/);
  await assert.rejects(env.agent.conn.setSessionMode({ sessionId: sid, modeId: "bogus" }), (err) => err.code === -32602);
});

test("an always-allow answer for the project is saved as a rule and asks no more", async (t) => {
  const env = await setup(t, { trusted: true });
  const sid = await newSession(env);
  env.client.permission = (p) => {
    assert.ok(p.options.some((o) => o.optionId === "proceed_always_project" && o.kind === "allow_always"), JSON.stringify(p.options));
    return { optionId: "proceed_always_project" };
  };
  const script = `
-- 01.response --
call[id=s1]: run_shell_command {"command":"touch kept.txt && echo kept"}
-- 02.response --
text: ran
`;
  await env.model.script(script, env.root);
  await prompt(env, sid, "run");
  assert.equal(env.client.permissions.length, 1);
  const settings = readFileSync(join(env.root, ".qwen", "settings.json"), "utf8");
  assert.match(settings, /touch/, "the allow rule is in the project's settings");

  const sid2 = await newSession(env);
  await env.model.script(script.replaceAll("s1", "s2"), env.root);
  await prompt(env, sid2, "run again");
  assert.equal(env.client.permissions.length, 1, "a new session asks no more");
  assert.match(await toolMessage(env, "s2"), /kept/);
});

test("todo_write streams the plan", async (t) => {
  const env = await setup(t);
  const sid = await newSession(env);
  await env.model.script(`
-- 01.response --
call[id=p1]: todo_write {"todos":[{"id":"1","content":"Read the code","status":"in_progress"},{"id":"2","content":"Fix it","status":"pending"}]}
-- 02.response --
text: planned
`, env.root);
  await prompt(env, sid, "plan");
  const plans = env.client.updatesOf("plan");
  assert.deepEqual(plans.at(-1).entries.map((e) => [e.content, e.status]), [["Read the code", "in_progress"], ["Fix it", "pending"]]);
});

test("load of an earlier session after a restart replays it and keeps its history", async (t) => {
  const root = tempDir(t, "qwen-acp-ws-");
  const home = tempDir(t, "qwen-acp-home-");
  const model = await startModel(t);
  const first = new TestClient();
  const a1 = startAgent(t, { home, modelURL: model.url, client: first, cwd: root });
  const init = await a1.conn.initialize({ protocolVersion: 1, clientCapabilities });
  if (!init.agentCapabilities?.loadSession) {
    t.skip("skipped: loadSession not advertised");
    return;
  }
  const { sessionId } = await a1.conn.newSession({ cwd: root, mcpServers: [] });
  await model.script(`
-- 01.response --
text: The secret word is noted.
`, root);
  await a1.conn.prompt({ sessionId, prompt: [{ type: "text", text: "remember the word marmalade" }] });
  assert.deepEqual(schemaViolations(a1), []);
  await a1.stop();

  const second = new TestClient();
  const a2 = startAgent(t, { home, modelURL: model.url, client: second, cwd: root });
  t.after(() => assert.deepEqual(schemaViolations(a2), []));
  await a2.conn.initialize({ protocolVersion: 1, clientCapabilities });
  await a2.conn.loadSession({ sessionId, cwd: root, mcpServers: [] });
  assert.ok(second.updatesOf("user_message_chunk").some((u) => u.content.text.includes("marmalade")), "the user's message is replayed");
  assert.ok(second.updatesOf("agent_message_chunk").some((u) => u.content.text.includes("secret word is noted")), "the answer is replayed");
  await model.script(`
-- 01.response --
text: marmalade
`, root);
  await a2.conn.prompt({ sessionId, prompt: [{ type: "text", text: "what was the word?" }] });
  const reqs = await model.requests();
  const last = JSON.stringify(reqs.at(-1).messages);
  assert.match(last, /remember the word marmalade/, "the next model request carries the earlier history");
});
