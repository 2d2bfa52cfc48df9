// One large fleet (3,000 clusters, about 24 MB, made by bench/fleet.py) through every JavaScript
// and WASI host Node runs, each output compared byte for byte with the native binary's.
// Small inputs never showed that an old Node's V8 crashes growing WebAssembly memory on a fleet
// this size; this test is why the README names the Node it does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './cases.mjs';

const fleet = join(root, 'target', 'fleet', 'fleet-3000.yaml');
const native = join(root, 'target', 'fleet', 'fleet-3000.native.yaml');
const missing = existsSync(fleet) && existsSync(native)
  ? false
  : 'target/fleet is missing: `make wasm-test` generates the fleet and its native output';

test('large fleet: WASI module under node:wasi', { skip: missing }, () => {
  const runner = join(root, 'wasm', 'run-wasi.mjs');
  const run = spawnSync(process.execPath, ['--no-warnings', runner, join(root, 'dist', 'capi2argo.wasm')], {
    input: readFileSync(fleet),
    maxBuffer: 1 << 30,
  });
  assert.equal(run.status, 0, run.stderr.toString());
  assert.ok(run.stdout.equals(readFileSync(native)), 'WASI output differs from the native output');
});

test('large fleet: npm package (node build)', { skip: missing }, () => {
  const pkg = createRequire(import.meta.url)(join(root, 'dist', 'npm'));
  const output = pkg.transform(readFileSync(fleet, 'utf8'));
  assert.equal(output, readFileSync(native, 'utf8'));
});

test('large fleet: npm package (web build)', { skip: missing }, async () => {
  const web = await import(join(root, 'dist', 'npm', 'web', 'capi2argo.js'));
  await web.default({ module_or_path: readFileSync(join(root, 'dist', 'npm', 'web', 'capi2argo_bg.wasm')) });
  assert.equal(web.transform(readFileSync(fleet, 'utf8')), readFileSync(native, 'utf8'));
});
