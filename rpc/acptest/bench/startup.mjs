// Measures how soon an ACP agent is usable: from process start to the
// answer to initialize, and to the answer to session/new, for qwen-ls --acp
// and Qwen Code's qwen --acp, alternating runs in one invocation against
// one scripted model on loopback. Prints each run and the medians; asserts
// nothing about the figures (a run that gets an error answer fails).
//
//   node bench/startup.mjs QWEN_LS_BIN [QWEN_CLI] [RUNS]
//
// The scripted model is QWEN_SCRIPTED_MODEL_BIN, else the
// qwen-scripted-model next to QWEN_LS_BIN (.ci/bench-acp builds both).
//
// QWEN_CLI may be empty or missing: the peer is then reported as not
// installed.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";

const [qwenLS, qwenCLIArg, runsArg] = process.argv.slice(2);
const qwenCLI = qwenCLIArg ? resolve(qwenCLIArg) : "";
const runs = Number(runsArg || 5);
if (!qwenLS) throw new Error("usage: startup.mjs QWEN_LS_BIN [QWEN_CLI] [RUNS]");

// The scripted model: session/new never asks it anything, but both agents
// must see a configured model to create a session.
const modelBin = process.env.QWEN_SCRIPTED_MODEL_BIN || join(dirname(qwenLS), "qwen-scripted-model");
const model = spawn(modelBin, [], { stdio: ["pipe", "pipe", "inherit"] });
const modelURL = await new Promise((done) => createInterface({ input: model.stdout }).once("line", done));

// one runs an agent once and returns [ms to initialize, ms to session/new].
async function one(cmd, args) {
  const home = realpathSync(mkdtempSync(join(tmpdir(), "acp-bench-home-")));
  const ws = realpathSync(mkdtempSync(join(tmpdir(), "acp-bench-ws-")));
  const env = { ...process.env, HOME: home, QWEN_HOME: join(home, ".qwen"), OPENAI_BASE_URL: modelURL, OPENAI_MODEL: "scripted", OPENAI_API_KEY: "sk-bench" };
  const t0 = process.hrtime.bigint();
  const proc = spawn(cmd, args, { cwd: ws, env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d) => { stderr += d; });
  const waiting = new Map();
  createInterface({ input: proc.stdout }).on("line", (line) => {
    let msg;
    try { msg = JSON.parse(line); } catch { return; }
    if (msg.id !== undefined && !msg.method && waiting.has(msg.id)) {
      waiting.get(msg.id)(msg);
      waiting.delete(msg.id);
    } else if (msg.id !== undefined && msg.method) {
      proc.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "not in this benchmark" } }) + "\n");
    }
  });
  const exited = new Promise((resolve) => proc.once("exit", resolve));
  const call = (id, method, params) => new Promise((resolve, reject) => {
    waiting.set(id, resolve);
    exited.then((code) => reject(new Error(`${cmd} exited (${code}) before answering ${method}: ${stderr.slice(-2000)}`)));
    proc.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  });
  const ms = () => Number(process.hrtime.bigint() - t0) / 1e6;
  try {
    const init = await call(1, "initialize", { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true } });
    if (init.error) throw new Error(`${cmd} initialize: ${JSON.stringify(init.error)}`);
    const tInit = ms();
    const ns = await call(2, "session/new", { cwd: ws, mcpServers: [] });
    if (ns.error) throw new Error(`${cmd} session/new: ${JSON.stringify(ns.error)}`);
    return [tInit, ms()];
  } finally {
    proc.stdin.end();
    const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
    rmSync(home, { recursive: true, force: true });
    rmSync(ws, { recursive: true, force: true });
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const agents = [["qwen-ls --acp", qwenLS, ["--acp"]]];
if (qwenCLI && existsSync(qwenCLI)) {
  agents.push(["qwen --acp", qwenCLI, ["--acp", "--auth-type", "openai"]]);
}
const results = new Map(agents.map(([name]) => [name, []]));
// One warm-up run each (page cache), not counted.
for (const [, cmd, args] of agents) await one(cmd, args);
for (let i = 0; i < runs; i++) {
  for (const [name, cmd, args] of agents) {
    const r = await one(cmd, args);
    results.get(name).push(r);
    console.log(`run ${i + 1} ${name}: initialize ${r[0].toFixed(1)} ms, session/new ${r[1].toFixed(1)} ms`);
  }
}
console.log(`\nmedians over ${runs} runs (process start to the answer):`);
const med = {};
for (const [name, rs] of results) {
  med[name] = [median(rs.map((r) => r[0])), median(rs.map((r) => r[1]))];
  console.log(`  ${name.padEnd(14)} initialize ${med[name][0].toFixed(1).padStart(8)} ms   session/new ${med[name][1].toFixed(1).padStart(8)} ms`);
}
if (med["qwen --acp"]) {
  const [a, b] = [med["qwen-ls --acp"], med["qwen --acp"]];
  console.log(`  qwen-ls is ${(b[0] / a[0]).toFixed(0)}x faster to initialize, ${(b[1] / a[1]).toFixed(0)}x faster to session/new`);
} else {
  console.log("  qwen --acp: not installed");
}
model.stdin.end();
