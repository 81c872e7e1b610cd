// The pieces every ACP test uses: the scripted model
// (qwen-scripted-model), the agent under test (qwen-ls --acp, spoken to through
// the SDK's client app: client().onRequest(…).connect(stream)) and a client
// that keeps unsaved buffers in memory and runs terminals as real
// processes.
import { spawn } from "node:child_process";
import { mkdtempSync, realpathSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { SchemaChecker } from "./schema.mjs";

export const BIN = process.env.QWEN_LS_BIN;
if (!BIN) throw new Error("set QWEN_LS_BIN to a built qwen-ls (.ci/acp does)");
// The scripted model: QWEN_SCRIPTED_MODEL_BIN, else the
// qwen-scripted-model next to qwen-ls (.ci/acp builds both).
export const MODEL_BIN = process.env.QWEN_SCRIPTED_MODEL_BIN || join(dirname(BIN), "qwen-scripted-model");

// tempDir makes a folder that is removed when the test ends.
export function tempDir(t, prefix) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// withTimeout fails a wait that takes longer than ms.
export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// startModel runs the scripted model and returns its base URL and
// control helpers.
export async function startModel(t) {
  const proc = spawn(MODEL_BIN, [], { stdio: ["pipe", "pipe", "inherit"] });
  t.after(() => proc.stdin.end());
  const rl = createInterface({ input: proc.stdout });
  const url = await withTimeout(new Promise((resolve, reject) => {
    rl.once("line", resolve);
    proc.once("error", reject);
    proc.once("exit", (code) => reject(new Error(`qwen-scripted-model exited with ${code}`)));
  }), 10000, "the scripted model's URL");
  const base = url.replace(/\/v1\/?$/, "");
  return {
    url,
    async script(text, root) {
      const res = await fetch(`${base}/_control/script?reset=1&ROOT=${encodeURIComponent(root)}`, { method: "POST", body: text });
      if (!res.ok) throw new Error(`script rejected: ${res.status} ${await res.text()}`);
    },
    async requests() {
      const res = await fetch(`${base}/_control/requests`);
      return res.json();
    },
  };
}

// TestClient is the editor: buffers holds unsaved text by absolute path
// (the disk answers for the rest), permission answers each
// session/request_permission with an option kind ("allow_once"...), an
// {optionId}, or "cancelled", and terminals run real processes.
export class TestClient {
  constructor() {
    this.buffers = new Map();
    this.updates = [];
    this.permissions = [];
    this.reads = [];
    this.writes = [];
    this.terminals = new Map();
    this.terminalCalls = [];
    this.nextTerminal = 1;
    this.permission = () => "allow_once";
    this.waiters = [];
  }

  // waitFor resolves when pred(client) holds, checked after every message
  // and every 50 ms (for conditions outside the protocol, like processes).
  waitFor(pred, what, ms = 15000) {
    if (pred(this)) return Promise.resolve();
    let timer;
    const met = new Promise((resolve) => {
      this.waiters.push({ pred, resolve });
      timer = setInterval(() => this.poke(), 50);
    });
    return withTimeout(met, ms, what).finally(() => clearInterval(timer));
  }

  poke() {
    this.waiters = this.waiters.filter((w) => {
      if (!w.pred(this)) return true;
      w.resolve();
      return false;
    });
  }

  async requestPermission(params) {
    this.permissions.push(params);
    this.poke();
    const kind = await this.permission(params);
    if (kind === "cancelled") return { outcome: { outcome: "cancelled" } };
    if (kind.optionId) return { outcome: { outcome: "selected", optionId: kind.optionId } };
    const option = params.options.find((o) => o.kind === kind);
    if (!option) throw new Error(`no ${kind} option in ${JSON.stringify(params.options)}`);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  }

  async sessionUpdate(params) {
    this.updates.push(params);
    this.poke();
  }

  async readTextFile(params) {
    this.reads.push(params.path);
    this.poke();
    if (this.buffers.has(params.path)) return { content: this.buffers.get(params.path) };
    try {
      return { content: readFileSync(params.path, "utf8") };
    } catch (err) {
      if (err.code === "ENOENT") throw acp.RequestError.resourceNotFound(params.path);
      throw err;
    }
  }

  async writeTextFile(params) {
    this.writes.push(params);
    this.buffers.set(params.path, params.content);
    this.poke();
    return {};
  }

  async createTerminal(params) {
    const id = `term-${this.nextTerminal++}`;
    const proc = spawn(params.command, params.args ?? [], { cwd: params.cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    const term = { id, params, proc, pid: proc.pid, output: "", exit: null, released: false, killed: false };
    term.exited = new Promise((resolve) => proc.once("exit", (code, signal) => {
      term.exit = { exitCode: code, signal };
      resolve(term.exit);
      this.poke();
    }));
    proc.stdout.on("data", (d) => { term.output += d; });
    proc.stderr.on("data", (d) => { term.output += d; });
    this.terminals.set(id, term);
    this.terminalCalls.push({ method: "create", ...params, terminalId: id });
    this.poke();
    return { terminalId: id };
  }

  term(params, method) {
    this.terminalCalls.push({ method, terminalId: params.terminalId });
    const term = this.terminals.get(params.terminalId);
    if (!term) throw acp.RequestError.invalidParams({}, `unknown terminal ${params.terminalId}`);
    this.poke();
    return term;
  }

  async terminalOutput(params) {
    const term = this.term(params, "output");
    return { output: term.output, truncated: false, ...(term.exit ? { exitStatus: term.exit } : {}) };
  }

  async waitForTerminalExit(params) {
    return await this.term(params, "wait_for_exit").exited;
  }

  async killTerminal(params) {
    const term = this.term(params, "kill");
    term.killed = true;
    if (!term.exit) process.kill(-term.pid, "SIGKILL");
    await term.exited;
    return {};
  }

  async releaseTerminal(params) {
    const term = this.term(params, "release");
    term.released = true;
    if (!term.exit) process.kill(-term.pid, "SIGKILL");
    return {};
  }

  // updatesOf lists the session/update payloads of one kind.
  updatesOf(kind) {
    return this.updates.map((u) => u.update).filter((u) => u.sessionUpdate === kind);
  }

  // toolCall merges a tool call's tool_call and tool_call_update payloads.
  toolCall(id) {
    const merged = {};
    for (const u of this.updates.map((x) => x.update)) {
      if ((u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.toolCallId === id) {
        Object.assign(merged, u);
        merged.contents = [...(merged.contents ?? []), ...(u.content ?? [])];
      }
    }
    return merged;
  }
}

// startAgent runs qwen-ls --acp with HOME in home and the model at
// modelURL (none when null; extraEnv adds variables), connected to client
// through the SDK. Every
// message the agent sends is checked against the ACP schema; the test
// fails at its end if one did not match.
export function startAgent(t, { home, modelURL, client, cwd, extraEnv = {}, fdLimit = 0 }) {
  const env = { ...process.env, HOME: home, QWEN_HOME: join(home, ".qwen") };
  for (const k of ["OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY", "DASHSCOPE_API_KEY"]) delete env[k];
  if (modelURL) Object.assign(env, { OPENAI_BASE_URL: modelURL, OPENAI_MODEL: "scripted", OPENAI_API_KEY: "sk-test" });
  Object.assign(env, extraEnv);
  // fdLimit runs the agent under that many open files (ulimit -n).
  const proc = fdLimit > 0
    ? spawn("/bin/sh", ["-c", `ulimit -n ${fdLimit} && exec "$0" --acp`, BIN], { cwd, env, stdio: ["pipe", "pipe", "pipe"] })
    : spawn(BIN, ["--acp"], { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal })));

  const checker = new SchemaChecker();
  checkers.push(checker);
  const raw = acp.ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout));
  const writer = raw.writable.getWriter();
  const stream = {
    readable: raw.readable.pipeThrough(new TransformStream({
      transform(msg, ctl) {
        checker.received(msg);
        // Updates are recorded here, in the order they arrived: the SDK
        // validates and dispatches each message on its own, so a handler
        // can run after the answer that followed its update.
        if (msg.method === acp.methods.client.session.update && msg.id === undefined) client.sessionUpdate(msg.params);
        ctl.enqueue(msg);
      },
    })),
    writable: new WritableStream({
      write(msg) {
        checker.sent(msg);
        return writer.write(msg);
      },
    }),
  };
  const m = acp.methods.client;
  const app = acp.client({ name: "qwen-ls-tests" })
    .onRequest(m.session.requestPermission, ({ params }) => client.requestPermission(params))
    .onRequest(m.fs.readTextFile, ({ params }) => client.readTextFile(params))
    .onRequest(m.fs.writeTextFile, ({ params }) => client.writeTextFile(params))
    .onRequest(m.terminal.create, ({ params }) => client.createTerminal(params))
    .onRequest(m.terminal.output, ({ params }) => client.terminalOutput(params))
    .onRequest(m.terminal.waitForExit, ({ params }) => client.waitForTerminalExit(params))
    .onRequest(m.terminal.kill, ({ params }) => client.killTerminal(params))
    .onRequest(m.terminal.release, ({ params }) => client.releaseTerminal(params))
    .onNotification(m.session.update, () => {}); // recorded from the stream, above
  const connection = app.connect(stream);
  const conn = agentCalls(connection.agent);
  const agent = {
    conn, connection, proc, checker, exited,
    get stderr() { return stderr; },
    async stop() {
      proc.stdin.end();
      const end = await withTimeout(exited, 10000, "qwen-ls to exit after stdin closed");
      return end;
    },
  };
  t.after(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.stdin.end();
      await withTimeout(exited, 10000, "qwen-ls to exit").catch(() => proc.kill("SIGKILL"));
    }
  });
  return agent;
}

// agentCalls names the agent's methods for the tests; every call goes
// through the SDK's typed request (or notify) by its ACP method name.
function agentCalls(ctx) {
  const a = acp.methods.agent;
  const req = (method) => (params) => ctx.request(method, params);
  return {
    initialize: req(a.initialize),
    logout: req(a.logout),
    newSession: req(a.session.new),
    loadSession: req(a.session.load),
    listSessions: req(a.session.list),
    resumeSession: req(a.session.resume),
    closeSession: req(a.session.close),
    deleteSession: req(a.session.delete),
    setSessionMode: req(a.session.setMode),
    setSessionConfigOption: req(a.session.setConfigOption),
    prompt: req(a.session.prompt),
    cancel: (params) => ctx.notify(a.session.cancel, params),
  };
}

// Every checker of this test file, for the count printed at its end.
const checkers = [];
process.on("exit", () => {
  const n = checkers.reduce((sum, c) => sum + c.checked, 0);
  const bad = checkers.reduce((sum, c) => sum + c.violations.length, 0);
  console.log(`# ${n} messages from the agent checked against the ACP v1 schema, ${bad} violations`);
});

// assertSchemaClean fails with every schema violation the agent made.
export function schemaViolations(agent) {
  return agent.checker.violations;
}

export const clientCapabilities = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };
