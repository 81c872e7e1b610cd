// Validates every message qwen-ls sends against the JSON schema that ships
// with the ACP SDK. Requests and notifications are checked against the
// params type the schema names for their method (x-method, x-side
// "client"); responses against the result type of the request they answer
// (x-side "agent"), errors against Error; every message against the
// schema's "Agent" message envelope as well.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import Ajv2020 from "ajv/dist/2020.js";

const require = createRequire(import.meta.url);
// The stable v1 schema, which SDK 2.x exports as schema/v1/schema.json.
const schemaPath = require.resolve("@agentclientprotocol/sdk/schema/v1/schema.json");
const schema = JSON.parse(readFileSync(schemaPath, "utf8"));

const ajv = new Ajv2020({ strict: false, allErrors: true });
const intRange = (lo, hi) => ({ type: "number", validate: (n) => Number.isInteger(n) && n >= lo && n <= hi });
ajv.addFormat("uint16", intRange(0, 0xffff));
ajv.addFormat("uint32", intRange(0, 0xffffffff));
ajv.addFormat("uint64", intRange(0, Number.MAX_SAFE_INTEGER));
ajv.addFormat("int32", intRange(-0x80000000, 0x7fffffff));
ajv.addFormat("int64", intRange(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER));
ajv.addFormat("double", { type: "number", validate: (n) => Number.isFinite(n) });
ajv.addFormat("uri", (s) => { try { new URL(s); return true; } catch { return false; } });
ajv.addSchema(schema, "acp");

const agentToClient = new Map(); // method → def of the params the agent sends
const agentResults = new Map(); // method → def of the result the agent answers with
for (const [name, def] of Object.entries(schema.$defs)) {
  if (!def["x-method"]) continue;
  if (def["x-side"] === "client" && /(Request|Notification)$/.test(name)) agentToClient.set(def["x-method"], name);
  if (def["x-side"] === "protocol") agentToClient.set(def["x-method"], name);
  if (def["x-side"] === "agent" && name.endsWith("Response")) agentResults.set(def["x-method"], name);
}

const compiled = new Map();
function validator(ref) {
  if (!compiled.has(ref)) compiled.set(ref, ajv.getSchema(`acp#${ref}`));
  return compiled.get(ref);
}

function check(ref, value, what, out) {
  const v = validator(ref);
  if (!v) {
    out.push(`${what}: the schema has no ${ref}`);
    return;
  }
  if (!v(value)) out.push(`${what}: ${JSON.stringify(value).slice(0, 400)}: ${ajv.errorsText(v.errors, { dataVar: what }).slice(0, 800)}`);
}

// SchemaChecker keeps the ids of the client's requests, so that a response
// is checked against its method's result type.
export class SchemaChecker {
  constructor() {
    this.pending = new Map();
    this.violations = [];
    this.checked = 0;
  }

  // sent records a message the client sent.
  sent(msg) {
    if (msg && msg.method && msg.id !== undefined) this.pending.set(JSON.stringify(msg.id), msg.method);
  }

  // received validates a message the agent sent.
  received(msg) {
    this.checked++;
    const out = this.violations;
    check("/anyOf/0", msg, "message", out);
    if (msg.method) {
      const def = agentToClient.get(msg.method);
      if (!def) {
        out.push(`${msg.method}: not a method an agent may send to a client`);
        return;
      }
      check(`/$defs/${def}`, msg.params, `${msg.method} params`, out);
      return;
    }
    const key = JSON.stringify(msg.id);
    const method = this.pending.get(key);
    this.pending.delete(key);
    if (msg.error) {
      check("/$defs/Error", msg.error, `error answer to ${method ?? key}`, out);
      return;
    }
    if (!method) {
      out.push(`a response to ${key}, which the client never sent`);
      return;
    }
    const def = agentResults.get(method);
    if (!def) {
      out.push(`${method}: the schema has no result type for it`);
      return;
    }
    check(`/$defs/${def}`, msg.result, `${method} result`, out);
  }
}
