// Sealing in every WebAssembly host (the WASI command with its system's randomness, the npm
// package's Node and web builds with Web Crypto's, kpt's WASM module with its glue's): what each
// seals opens, with the test controller's private key and Node's own crypto (OpenSSL), to the
// Secret the native binary writes without sealing. Written from the Sealed Secrets format (a
// 2-byte length, RSA-OAEP-SHA-256 of an AES-256 key under the scope's label, AES-GCM with a zero
// nonce), not from kubeseal's code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './cases.mjs';
import { certificate, fixture, opensTo, plainValues } from './unseal.mjs';

const input = fixture('providers/kubeadm.yaml');
const native = join(root, 'target', 'debug', 'capi2argo');
const require = createRequire(import.meta.url);
const npm = require(join(root, 'dist', 'npm'));
const web = await import(join(root, 'dist', 'npm', 'web', 'capi2argo.js'));
await web.default({ module_or_path: readFileSync(join(root, 'dist', 'npm', 'web', 'capi2argo_bg.wasm')) });

const config = { seal: 'sealedSecrets', sealingCertificate: certificate };
const expected = plainValues(native, input, spawnSync);
const opensToThePlainSecret = (output, label) => opensTo(output, expected, label);

test('seal/npm: the Node and web builds seal with Web Crypto\'s randomness, and it opens', () => {
  const seen = [];
  for (const binding of [npm, web]) {
    const outcome = binding.transformWithResults(input, config);
    assert.equal(outcome.failed, false, JSON.stringify(outcome.results));
    seen.push(opensToThePlainSecret(outcome.output).config);
  }
  assert.notEqual(seen[0], seen[1], 'fresh randomness each run');
  const wide = npm.transform(input, { ...config, sealScope: 'namespace-wide' });
  opensToThePlainSecret(wide, () => 'argocd');
  assert.match(wide, /sealedsecrets\.bitnami\.com\/namespace-wide: "true"/);
});

test('seal/wasi: the WASI command seals with its system\'s randomness, and it opens', () => {
  // No preopened directory: the settings come as --set, the certificate's PEM text as it is.
  const env = { ...process.env };
  delete env.CAPI2ARGO_RANDOM;
  const args = ['--set', 'seal=sealedSecrets', '--set', `sealingCertificate=${certificate}`];
  const outputs = [0, 1].map(() => {
    const run = spawnSync(process.execPath, ['--no-warnings', join(root, 'wasm', 'run-wasi.mjs'), join(root, 'dist', 'capi2argo.wasm'), ...args], { input, env });
    assert.equal(run.status, 0, run.stderr.toString());
    return opensToThePlainSecret(run.stdout.toString());
  });
  assert.notEqual(outputs[0].config, outputs[1].config, 'fresh randomness each run');
});

const hasKpt = spawnSync('kpt', ['version']).status === 0;
const noKpt = hasKpt ? false : '`kpt` is not on PATH, so kpt\'s WASM runtime was NOT asked to seal';

test('seal/kpt: kpt\'s WASM module seals with its glue\'s randomness, and it opens', { skip: noKpt }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'capi2argo-seal-kpt-'));
  try {
    const pkg = join(dir, 'pkg');
    cpSync(join(root, 'Kptfile-examples', 'sealed-fleet'), pkg, { recursive: true, filter: (src) => !src.includes('.expected') });
    writeFileSync(join(pkg, 'capi.yaml'), input);
    const run = spawnSync('kpt', ['fn', 'eval', pkg, '--allow-alpha-wasm', '--exec', join(root, 'dist', 'capi2argo-kpt.wasm'), '--fn-config', join(pkg, 'seal.yaml')], {
      env: { ...process.env, KPT_FN_WASM_RUNTIME: 'nodejs', TMPDIR: dir },
    });
    assert.equal(run.status, 0, run.stderr.toString());
    const written = readdirSync(join(pkg, 'argocd'));
    assert.deepEqual(written, ['cluster-prod-eu-1.yaml']);
    opensToThePlainSecret(readFileSync(join(pkg, 'argocd', written[0]), 'utf8'));
    assert.ok(!existsSync(join(pkg, 'capi.yaml')), 'the kubeconfig Secrets are not written back');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
