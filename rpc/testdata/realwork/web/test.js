// npm test: checks the dependency npm ci installed.
const assert = require("assert");
const { double } = require("weblib");
assert.strictEqual(double(2), 4);
assert.strictEqual(double(-3), -6);
console.log("web: 2 checks passed");
