// The npm package (dist/npm): Node build and web build, against every golden case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { cases, jsApplicable, root, settings } from './cases.mjs';

const pkg = join(root, 'dist', 'npm');
const require = createRequire(import.meta.url);
const node = require(pkg);
const web = await import(join(pkg, 'web', 'capi2argo.js'));
await web.default({ module_or_path: readFileSync(join(pkg, 'web', 'capi2argo_bg.wasm')) });

/** What the native binary prints on stderr for a set of results. */
function stderrLines(results) {
  return results
    .map((r) => {
      let line = `${r.severity}: `;
      if (r.resourceRef) {
        const ref = r.resourceRef;
        const name = ref.name || '<no name>';
        line += ref.namespace ? `${ref.kind} ${ref.namespace}/${name}: ` : `${ref.kind} ${name}: `;
      }
      if (r.field) line += `${r.field.path}: `;
      return `${line}${r.message}\n`;
    })
    .join('');
}

for (const [label, binding] of [['node', node], ['web', web]]) {
  for (const c of cases().filter(jsApplicable)) {
    test(`npm/${label}: ${c.name}`, () => {
      const config = c.args.length ? settings(c.args) : undefined;
      const input = c.input.toString();
      const now = Date.parse(c.now);
      if (c.code === 2) {
        assert.throws(() => binding.transform(input, config, now), (e) => e instanceof Error && `capi2argo: ${e.message}\n` === c.stderr);
        return;
      }
      assert.equal(binding.transform(input, config, now), c.stdout);
      const outcome = binding.transformWithResults(input, config, now);
      assert.equal(outcome.output, c.stdout);
      assert.equal(outcome.failed, c.code === 1);
      // Where kpt sent the input, the native binary leaves the results off stderr (kpt prints
      // the ResourceList's results, which the output above holds) but for a line counting the
      // errors; elsewhere stderr is every result.
      const errors = outcome.results.filter((r) => r.severity === 'error').length;
      const kptSummary = errors === 0 ? '' : `capi2argo: ${errors} error${errors === 1 ? '' : 's'}, in the function's results\n`;
      if (!/^kind: ResourceList$/m.test(input) || c.stderr !== kptSummary) {
        assert.equal(stderrLines(outcome.results), c.stderr);
      }
    });
  }
}

// The text plan (`capi2argo plan`, no -o) of every plan case: the same lines, the same outcome.
for (const [label, binding] of [['node', node], ['web', web]]) {
  const plans = cases().filter((c) => c.args[0] === 'plan' && !c.args.some((a) => a === '-o' || a === '--output') && !c.name.includes('not-utf8'));
  test(`npm/${label}: planWithResults prints what capi2argo plan prints`, () => {
    assert.ok(plans.length >= 3, 'plan cases');
    for (const c of plans) {
      const rest = c.args.slice(1);
      const config = rest.length ? settings(rest) : undefined;
      const outcome = binding.planWithResults(c.input.toString(), config, Date.parse(c.now));
      assert.equal(outcome.output, c.stdout, c.name);
      assert.equal(outcome.failed, c.code === 1, c.name);
    }
  });
}

test('npm: a settings object and a Capi2Argo object are both accepted', () => {
  const input = readFileSync(join(root, 'tests', 'golden', 'namespaced-names', 'input.yaml'), 'utf8')
    .replace(/functionConfig:[\s\S]*$/, '');
  const viaSettings = node.transform(input, { namespacedNames: true });
  const viaObject = node.transform(input, { apiVersion: 'fn.capi2argo.dev/v1alpha1', kind: 'Capi2Argo', spec: { namespacedNames: true } });
  assert.equal(viaSettings, viaObject);
  assert.match(viaSettings, /name: cluster-team-a-prod\n/);
  assert.throws(() => node.transform(input, { namespaceNames: true }), /did you mean namespacedNames/);
});

test('npm: the helpers for pages that show the function\'s text', () => {
  // A token after an emoji and accents: offsets count UTF-16 code units, as JavaScript does.
  const kubeconfig = 'apiVersion: v1\nkind: Config\n# 🚀 clüster\nclusters:\n- name: Lab.Cluster\n  cluster: {server: "https://ops:pw@lab.example:6443"}\nusers:\n- name: u\n  user: {token: "tøken-1234"}\ncontexts:\n- name: c\n  context: {cluster: Lab.Cluster, user: u}\ncurrent-context: c\n';
  const ranges = [...node.credentialRanges(kubeconfig)];
  const hidden = [];
  for (let i = 0; i < ranges.length; i += 2) hidden.push(kubeconfig.slice(ranges[i], ranges[i + 1]));
  assert.deepEqual(hidden, ['ops:pw', 'tøken-1234']);
  assert.deepEqual([...node.urlCredentials('https://ops:pw@lab.example:6443')], [8, 14]);
  assert.deepEqual([...node.urlCredentials('https://lab.example:6443')], []);
  // The broken document shows only the key of the line the error names.
  const broken = 'a: b\nc: d: e\n';
  const masks = [...node.credentialRanges(broken)];
  let visible = '';
  let at = 0;
  for (let i = 0; i < masks.length; i += 2) {
    visible += broken.slice(at, masks[i]);
    at = masks[i + 1];
  }
  visible += broken.slice(at);
  assert.equal(visible, 'c:');

  const wrapped = node.wrapKubeconfig(kubeconfig);
  assert.equal(wrapped.secretName, 'lab-cluster-kubeconfig');
  assert.equal(wrapped.cluster, 'lab-cluster');
  assert.equal(wrapped.clusterEntry, 'Lab.Cluster');
  assert.equal(node.wrapKubeconfig('kind: Secret\n'), undefined);

  const output = node.transform(wrapped.text);
  const secrets = node.clusterSecrets(output);
  assert.deepEqual(secrets.map((s) => [s.name, s.namespace, s.owned]), [['cluster-lab-cluster', 'argocd', true]]);
  assert.ok(secrets[0].text.startsWith('---\napiVersion: v1\nkind: Secret\n'));
  assert.equal(web.clusterSecrets(output)[0].text, secrets[0].text);
});
