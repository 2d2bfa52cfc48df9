// The book's WebAssembly commands (docs/src/webassembly.md) run as written (this Node first on
// PATH), and its size table matches what `make wasm` built.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { root } from './cases.mjs';
import { markerCount, stale } from '../../wasm/sizes.mjs';

const readme = readFileSync(join(root, 'docs', 'src', 'webassembly.md'), 'utf8');
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` };
const sh = (command, cwd) => spawnSync('sh', ['-c', command], { cwd, env, maxBuffer: 1 << 26 });

test('readme: the WASI command as written', () => {
  const command = 'node --no-warnings wasm/run-wasi.mjs dist/capi2argo.wasm < tests/fixtures/providers/kubeadm.yaml';
  assert.ok(readme.includes(command), 'the book shows this command');
  const run = sh(command, root);
  assert.equal(run.status, 0, run.stderr.toString());
  const native = spawnSync(join(root, 'target', 'debug', 'capi2argo'), [join(root, 'tests/fixtures/providers/kubeadm.yaml')]);
  assert.equal(run.stdout.toString(), native.stdout.toString());
});

test('readme: the kpt WASM command as written', (t) => {
  if (spawnSync('kpt', ['version']).status !== 0) {
    t.skip('`kpt` is not on PATH, so the book\'s kpt WASM command was NOT run');
    return;
  }
  const command = 'KPT_FN_WASM_RUNTIME=nodejs kpt fn eval my-package --allow-alpha-wasm --exec dist/capi2argo-kpt.wasm -- namespacedNames=true';
  assert.ok(readme.includes(command), 'the book shows this command');
  const dir = mkdtempSync(join(tmpdir(), 'capi2argo-readme-'));
  try {
    const pkg = join(dir, 'my-package');
    mkdirSync(pkg);
    writeFileSync(join(pkg, 'Kptfile'), 'apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: my-package\n');
    copyFileSync(join(root, 'tests/fixtures/providers/kubeadm.yaml'), join(pkg, 'capi-secrets.yaml'));
    mkdirSync(join(dir, 'dist'));
    copyFileSync(join(root, 'dist', 'capi2argo-kpt.wasm'), join(dir, 'dist', 'capi2argo-kpt.wasm'));
    const run = sh(command, dir);
    assert.equal(run.status, 0, run.stderr.toString());
    assert.ok(existsSync(join(pkg, 'argocd', 'cluster-fleet-eu-prod-eu-1.yaml')), 'kpt wrote the new Secret');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('readme: the WebAssembly sizes are the built ones', () => {
  assert.equal(markerCount(readme), 4, 'four artifacts in the size table');
  assert.deepEqual(stale(readme), [], 'the book\'s size table is stale: make sizes rewrites it');
});
