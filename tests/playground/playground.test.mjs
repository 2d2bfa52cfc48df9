// The playground (dist/playground, `make playground`) in a real browser: Debian's Chromium,
// headless, driven by playwright-core, opening the page from disk as a new user would.
// CHROMIUM (the browser binary) and PLAYWRIGHT (playwright-core's directory) come from the
// Makefile; the native binary (target/debug/capi2argo) is the reference for every output.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(import.meta.dirname, '..', '..');
const page_url = pathToFileURL(join(root, 'dist', 'playground', 'index.html')).href;
const native = join(root, 'target', 'debug', 'capi2argo');
const artifacts = join(root, 'target', 'playground');
const { chromium } = createRequire(import.meta.url)(process.env.PLAYWRIGHT);

const CSP = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; connect-src 'none'; base-uri 'none'; form-action 'none'";

let browser;
let page;
const requests = [];

before(async () => {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking'],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(page_url);
  await page.waitForFunction(() => window.playground && window.playground.ready);
});

after(async () => {
  await browser?.close();
});

/** The native binary on `input` with the same ConfigMap the page sends. */
function nativeRun(input, config) {
  const dir = mkdtempSync(join(tmpdir(), 'capi2argo-playground-'));
  try {
    writeFileSync(join(dir, 'in.yaml'), input);
    writeFileSync(join(dir, 'fn.json'), JSON.stringify(config));
    const run = spawnSync(native, ['--fn-config', join(dir, 'fn.json'), join(dir, 'in.yaml')]);
    return { output: run.stdout.toString(), code: run.status, stderr: run.stderr.toString() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('playground: the page carries its CSP, and the CSP forbids connections', async () => {
  const csp = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
  assert.equal(csp, CSP);
  // A connection attempt from the page is refused by the browser, not merely unused.
  const refused = await page.evaluate(async () => {
    try {
      await fetch('https://example.com/');
      return false;
    } catch (_) {
      return true;
    }
  });
  assert.ok(refused, 'fetch from the page is blocked');
});

test('playground: every provider example gives what the native binary gives', async () => {
  mkdirSync(artifacts, { recursive: true });
  const names = await page.$$eval('#example option', (os) => os.map((o) => o.value).filter(Boolean));
  const fixtures = readdirSync(join(root, 'tests', 'fixtures', 'providers')).filter((f) => f.endsWith('.yaml'));
  assert.equal(names.length, fixtures.length, 'one example per provider fixture');
  for (const name of names) {
    const runs = Number(await page.getAttribute('body', 'data-runs'));
    await page.selectOption('#example', name);
    await page.waitForFunction((n) => Number(document.body.dataset.runs) > n, runs);
    const { input, config, outcome } = await page.evaluate(() => ({
      input: document.getElementById('input').value,
      config: window.playground.config(),
      outcome: window.playground.run(),
    }));
    const expected = nativeRun(input, config);
    assert.equal(outcome.output, expected.output, `${name}: output`);
    assert.equal(outcome.failed, expected.code === 1, `${name}: failed`);
    const shown = await page.$$eval('#results .result', (rs) => rs.length);
    assert.equal(shown, outcome.results.length, `${name}: every result is listed`);
    const generated = await page.evaluate(() => window.playground.generated());
    assert.match(generated, /capi-to-argocd\/owned: "true"/, `${name}: the Argo CD Secrets tab`);
    assert.doesNotMatch(generated, /cluster\.x-k8s\.io\/cluster-name:/, `${name}: only the generated Secrets`);
    const rows = await page.$$eval('#mapping tbody tr', (rs) => rs.length);
    assert.ok(rows >= 1, `${name}: the From → to view names the Argo CD Secret`);
    await page.screenshot({ path: join(artifacts, `${name.replace(/[^A-Za-z0-9]+/g, '-')}.png`) });
  }
});

test('playground: secret values are hidden until asked for', async () => {
  await page.selectOption('#example', { index: 1 }); // kubeadm: a client key
  await page.evaluate(() => window.playground.run());
  const outcome = await page.evaluate(() => window.playground.run());
  const key = outcome.output.match(/"keyData": "([^"]+)"/)[1];
  assert.ok(!(await page.textContent('#output')).includes(key), 'the key is masked');
  await page.check('#reveal');
  assert.ok((await page.textContent('#output')).includes(key), 'revealed on request');
  await page.uncheck('#reveal');
});

test('playground: a bare kubeconfig is wrapped, and settings come from the key table', async () => {
  const kubeconfig = 'apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster: {server: "https://lab.example:6443"}\nusers:\n- name: admin\n  user: {token: lab-token}\ncontexts:\n- name: lab\n  context: {cluster: lab, user: admin}\ncurrent-context: lab\n';
  await page.click('#settings-pane summary');
  await page.fill('#setting-argoNamespace', 'gitops');
  await page.fill('#input', kubeconfig);
  const outcome = await page.evaluate(() => window.playground.run());
  assert.match(await page.textContent('#notice'), /lab-kubeconfig/);
  assert.match(outcome.output, /name: cluster-lab\n\s+namespace: gitops\n/);
  const keys = await page.$$eval('#settings [name]', (fs) => fs.map((f) => f.name));
  const help = spawnSync(native, ['--help']).stdout.toString();
  for (const key of keys) assert.ok(help.includes(key), `${key} is a setting the function knows`);
  assert.ok(keys.length >= 20, 'the form holds the settings');
  await page.fill('#setting-argoNamespace', '');
  await page.click('#settings-pane summary');
});

test('playground: validate mode checks Argo CD cluster Secrets and changes nothing', async () => {
  const secret = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-x\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\nstringData:\n  name: x\n  server: https://x.example:6443\n  config: \'{"tlsClientConfig":{"insecure":"no"}}\'\n';
  await page.selectOption('#mode', 'validate');
  await page.fill('#input', secret);
  const outcome = await page.evaluate(() => window.playground.run());
  assert.ok(outcome.failed);
  assert.match(outcome.results.map((r) => r.field?.path).join(' '), /tlsClientConfig\.insecure/);
  await page.selectOption('#mode', 'convert');
  await page.selectOption('#example', { index: 1 });
  await page.screenshot({ path: join(artifacts, 'playground.png') });
});

test('playground: the page made no request but for its own files', async () => {
  const base = pathToFileURL(join(root, 'dist', 'playground')).href;
  const foreign = requests.filter((u) => !u.startsWith(base + '/'));
  assert.deepEqual(foreign, [], 'requests outside the page');
  assert.ok(requests.length >= 5, 'the page and its scripts were loaded');
});

test('playground: the README screenshot is the page', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  assert.match(readme, /!\[[^\]]*\]\(docs\/playground\.png\)/);
  const png = readFileSync(join(root, 'docs', 'playground.png'));
  assert.equal(png.subarray(1, 4).toString(), 'PNG');
});
