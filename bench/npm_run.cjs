// One npm row run for bench/run.py: the wasm-bindgen package dist/npm (its Node build) in Node.
//
//   node bench/npm_run.cjs INPUT.yaml [MODULE]     (MODULE: default dist/npm/node/capi2argo.js)
//
// Times, in-process: `load` = require() of dist/npm/node (reads and instantiates the .wasm),
// `read` = reading INPUT as a string, `transform` = one transform(input) call (copying the string
// into WebAssembly memory, the run, and the output string back to JavaScript). The output is
// then written to /dev/null, outside the timings, so the process does what the CLI does.
// Prints one JSON line on stdout.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const t0 = process.hrtime.bigint();
const { transform } = require(process.argv[3] ? path.resolve(process.argv[3]) : path.join(__dirname, "..", "dist", "npm", "node", "capi2argo.js"));
const t1 = process.hrtime.bigint();
const input = fs.readFileSync(process.argv[2], "utf8");
const t2 = process.hrtime.bigint();
let output = "";
let error = null;
try {
  output = transform(input);
} catch (e) {
  error = String(e).slice(0, 200);
}
const t3 = process.hrtime.bigint();
fs.writeFileSync("/dev/null", output);
const s = (a, b) => Number(b - a) / 1e9;
process.stdout.write(JSON.stringify({ load: s(t0, t1), read: s(t1, t2), transform: s(t2, t3), outputBytes: output.length, error }) + "\n");
