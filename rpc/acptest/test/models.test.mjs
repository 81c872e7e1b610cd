// A Qwen Code 0.24 model configuration (testdata/qwen-code-config), used
// unchanged by qwen-ls --acp, and the model chosen through ACP's session
// config options with the official SDK.
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk";
import { TestClient, schemaViolations, startAgent, startModel, tempDir } from "../lib/harness.mjs";

const fixture = fileURLToPath(new URL("../../../testdata/qwen-code-config/home/.qwen/", import.meta.url));

// setup copies the configuration into a new home, points its two
// OpenAI-compatible providers at two scripted models, and initializes.
async function setup(t) {
  const root = tempDir(t, "qwen-acp-ws-");
  const home = tempDir(t, "qwen-acp-home-");
  mkdirSync(join(home, ".qwen"), { recursive: true });
  for (const f of ["settings.json", ".env"]) copyFileSync(join(fixture, f), join(home, ".qwen", f));
  const dash = await startModel(t);
  const or = await startModel(t);
  const client = new TestClient();
  const agent = startAgent(t, {
    home, modelURL: null, client, cwd: root,
    extraEnv: { QWEN_FIXTURE_DASHSCOPE_URL: dash.url, QWEN_FIXTURE_OPENROUTER_URL: or.url },
  });
  t.after(() => assert.deepEqual(schemaViolations(agent), [], "every message the agent sent matches the ACP schema"));
  await agent.conn.initialize({ protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  return { root, home, dash, or, client, agent };
}

const option = (opts, id) => opts.find((o) => o.id === id);

test("a Qwen Code settings.json + .env works unchanged, and set_config_option switches the model", async (t) => {
  const env = await setup(t);
  const res = await env.agent.conn.newSession({ cwd: env.root, mcpServers: [] });
  const sid = res.sessionId;
  const model = option(res.configOptions, "model");
  assert.equal(model.category, "model");
  assert.equal(model.currentValue, "qwen3-coder-plus");
  assert.deepEqual(model.options.map((o) => o.value), ["qwen3-coder-plus", "qwen/qwen3-coder", "claude-sonnet-4-5"]);
  assert.equal(option(res.configOptions, "mode").currentValue, "default");

  await env.dash.script("-- 01.response --\ntext: from DashScope\n", env.root);
  await env.agent.conn.prompt({ sessionId: sid, prompt: [{ type: "text", text: "one" }] });
  assert.deepEqual((await env.dash.requests()).map((r) => r.model), ["qwen3-coder-plus"]);

  const set = await env.agent.conn.setSessionConfigOption({ sessionId: sid, configId: "model", value: "qwen/qwen3-coder" });
  assert.equal(option(set.configOptions, "model").currentValue, "qwen/qwen3-coder");
  await env.client.waitFor((c) => c.updatesOf("config_option_update").some((u) => option(u.configOptions, "model")?.currentValue === "qwen/qwen3-coder"), "config_option_update");

  await env.or.script("-- 01.response --\ntext: from OpenRouter\n", env.root);
  await env.agent.conn.prompt({ sessionId: sid, prompt: [{ type: "text", text: "two" }] });
  assert.deepEqual((await env.or.requests()).map((r) => r.model), ["qwen/qwen3-coder"]);
  assert.equal((await env.dash.requests()).length, 1, "nothing more went to DashScope");

  await assert.rejects(env.agent.conn.setSessionConfigOption({ sessionId: sid, configId: "model", value: "gpt-5" }),
    (err) => err.code === -32602 && /claude-sonnet-4-5/.test(err.message));
  const mode = await env.agent.conn.setSessionConfigOption({ sessionId: sid, configId: "mode", value: "plan" });
  assert.equal(option(mode.configOptions, "mode").currentValue, "plan");
  await env.client.waitFor((c) => c.updatesOf("current_mode_update").some((u) => u.currentModeId === "plan"), "current_mode_update");
});
