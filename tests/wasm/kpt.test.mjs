// kpt's WASM module (dist/capi2argo-kpt.wasm) under kpt's own Node runtime: golden cases and a real kpt run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { cases, jsApplicable, root } from './cases.mjs';

const module = join(root, 'dist', 'capi2argo-kpt.wasm');
const fleet = join(root, 'Kptfile-examples', 'layered-fleet');
const hasKpt = spawnSync('kpt', ['version']).status === 0;
// Skipped tests say why in the TAP output (`# SKIP …`), which `make test` counts.
const noKpt = hasKpt ? false : '`kpt` is not on PATH, so the kpt WASM module was NOT run by kpt';

const scratch = () => mkdtempSync(join(tmpdir(), 'capi2argo-kptwasm-'));

/** kpt writes its glue script to $TMPDIR/kpt-wasm-fn/; run kpt once and keep what it wrote. */
function kptGlue(dir) {
  const tmp = join(dir, 'tmp');
  const pkg = join(dir, 'pkg');
  cpSync(fleet, pkg, { recursive: true, filter: (src) => !src.includes('.expected') });
  const run = kpt(['fn', 'eval', pkg, '--allow-alpha-wasm', '--exec', module], { TMPDIR: tmp });
  assert.equal(run.status, 0, run.stderr.toString());
  const runners = join(tmp, 'kpt-wasm-fn');
  const glue = readdirSync(runners).map((d) => join(runners, d, 'kpt-fn-wasm-glue-runner.js')).find(existsSync);
  assert.ok(glue, 'kpt wrote its glue script');
  return glue;
}

function kpt(args, env = {}) {
  return spawnSync('kpt', args, { env: { ...process.env, KPT_FN_WASM_RUNTIME: 'nodejs', ...env } });
}

function files(dir) {
  const out = {};
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (name === '.expected') continue;
      if (statSync(path).isDirectory()) walk(path);
      else out[relative(dir, path)] = readFileSync(path, 'utf8');
    }
  };
  walk(dir);
  return out;
}

test('kpt wasm: every YAML ResourceList golden case through kpt\'s glue', { skip: noKpt }, () => {
  const dir = scratch();
  try {
    const glue = kptGlue(dir);
    let checked = 0;
    // kpt's runtime gives the module no clock: a case that pins a time of its own (to check
    // certificates against it) has nothing to say here.
    for (const c of cases().filter(jsApplicable).filter((c) => !c.ownClock)) {
      const input = c.input.toString();
      // kpt only ever sends YAML ResourceLists.
      if (!/^kind: ResourceList$/m.test(input)) continue;
      const run = spawnSync(process.execPath, [glue], { input, env: { ...process.env, KPT_FN_WASM_PATH: module } });
      const stdout = run.stdout.toString();
      if (c.code === 2) {
        assert.equal(run.status, 1, c.name);
        assert.match(stdout, /kind: ResourceList\n/, c.name);
        assert.ok(stdout.includes(`message: ${JSON.stringify(c.stderr.replace(/^capi2argo: /, '').trimEnd())}`) || stdout.includes(c.stderr.replace(/^capi2argo: /, '').trimEnd()), `${c.name}: ${stdout}`);
      } else {
        assert.equal(stdout, `${c.stdout}\n`, c.name); // console.log adds the newline
        assert.equal(run.status, c.code, c.name);
      }
      checked += 1;
    }
    assert.ok(checked >= 30, `checked ${checked} cases`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// kpt's glue calls processResourceListErrors when the output has no `kind: ResourceList` line
// (JSON in, JSON out): the module registers it and answers with a YAML ResourceList of errors.
test('kpt wasm: processResourceListErrors answers when the output is not YAML', { skip: noKpt }, () => {
  const dir = scratch();
  try {
    const glue = kptGlue(dir);
    const json = '{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x-kubeconfig","namespace":"ns","labels":{"cluster.x-k8s.io/cluster-name":"x"}},"stringData":{"value":"not: [a kubeconfig"}}]}';
    const run = spawnSync(process.execPath, [glue], { input: json, env: { ...process.env, KPT_FN_WASM_PATH: module } });
    const stdout = run.stdout.toString();
    assert.match(stdout, /^kind: ResourceList$/m, stdout);
    assert.match(stdout, /severity: error/, stdout);
    assert.match(stdout, /x-kubeconfig/, stdout);
    assert.equal(run.status, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('kpt wasm: kpt fn eval and kpt fn render give what the native render gives', { skip: noKpt }, () => {
  const dir = scratch();
  try {
    const expected = files(join(fleet, '.expected'));
    // eval with the package's config file
    const evalPkg = join(dir, 'eval');
    cpSync(fleet, evalPkg, { recursive: true, filter: (src) => !src.includes('.expected') });
    let run = kpt(['fn', 'eval', evalPkg, '--allow-alpha-wasm', '--exec', module, '--fn-config', join(evalPkg, 'fleet-config.yaml')], { TMPDIR: dir });
    assert.equal(run.status, 0, run.stderr.toString());
    const evaluated = files(evalPkg);
    delete evaluated.Kptfile;
    assert.deepEqual(evaluated, expected);
    // render, with the Kptfile pipeline pointing at the module
    const renderPkg = join(dir, 'render');
    cpSync(fleet, renderPkg, { recursive: true, filter: (src) => !src.includes('.expected') });
    const kptfile = join(renderPkg, 'Kptfile');
    writeFileSync(kptfile, readFileSync(kptfile, 'utf8').replace('exec: capi2argo', `exec: ${module}`));
    for (let pass = 0; pass < 2; pass += 1) {
      run = kpt(['fn', 'render', renderPkg, '--allow-alpha-wasm', '--allow-exec'], { TMPDIR: dir });
      assert.equal(run.status, 0, run.stderr.toString());
      const rendered = files(renderPkg);
      delete rendered.Kptfile;
      assert.deepEqual(rendered, expected, `render pass ${pass + 1}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('kpt wasm: an error result fails the kpt run and writes nothing', { skip: noKpt }, () => {
  const dir = scratch();
  try {
    const pkg = join(dir, 'pkg');
    cpSync(fleet, pkg, { recursive: true, filter: (src) => !src.includes('.expected') });
    const before = files(pkg);
    const run = kpt(['fn', 'eval', pkg, '--allow-alpha-wasm', '--exec', module, '--', 'mode=fetch'], { TMPDIR: dir });
    assert.notEqual(run.status, 0);
    assert.match(run.stdout.toString() + run.stderr.toString(), /expected push or pull/);
    assert.deepEqual(files(pkg), before);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('kpt wasm: a large fleet (3,000 clusters) through kpt\'s glue gives the native output', { skip: noKpt }, (t) => {
  const fleetList = join(root, 'target', 'fleet', 'fleet-3000.yaml');
  const native = join(root, 'target', 'fleet', 'fleet-3000.native.yaml');
  if (!existsSync(fleetList) || !existsSync(native)) {
    t.skip('target/fleet is missing: `make wasm-test` generates the fleet and its native output');
    return;
  }
  const dir = scratch();
  try {
    const glue = kptGlue(dir);
    const run = spawnSync(process.execPath, [glue], {
      input: readFileSync(fleetList),
      env: { ...process.env, KPT_FN_WASM_PATH: module },
      maxBuffer: 1 << 30,
    });
    assert.equal(run.status, 0, run.stderr.toString());
    assert.equal(run.stdout.toString(), `${readFileSync(native, 'utf8')}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
