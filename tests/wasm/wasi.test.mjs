// The WASI module (dist/capi2argo.wasm) under Node's WASI: every golden case, byte for byte, same exit code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { cases, pinnedRandom, root } from './cases.mjs';

const module = join(root, 'dist', 'capi2argo.wasm');
const runner = join(root, 'wasm', 'run-wasi.mjs');

for (const c of cases()) {
  test(`wasi/node: ${c.name}`, () => {
    const env = { ...process.env, CAPI2ARGO_NOW: c.now, CAPI2ARGO_RANDOM: pinnedRandom() };
    const run = spawnSync(process.execPath, ['--no-warnings', runner, module, ...c.args], { input: c.input, env });
    assert.equal(run.stdout.toString(), c.stdout);
    assert.equal(run.stderr.toString(), c.stderr);
    assert.equal(run.status, c.code);
  });
}
