// Builds the playground into a directory any static host (or a browser opening the file) serves:
// node wasm/playground/build.mjs GLUE_DIR OUT_DIR, where GLUE_DIR holds wasm-bindgen's
// `--target no-modules` output (capi2argo.js, capi2argo_bg.wasm). The module's bytes, the
// worker's script and the examples become plain scripts, so the page needs no fetch and no ES
// module import (browsers refuse both from file://).
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [glue, out] = process.argv.slice(2);
if (!glue || !out) {
  console.error('usage: node wasm/playground/build.mjs GLUE_DIR OUT_DIR');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const file of ['index.html', 'style.css', 'playground.js', 'textview.js']) copyFileSync(join(here, file), join(out, file));
// The worker's script: wasm-bindgen's glue and worker.js, as a string the page turns into a
// blob: URL (the only way a page opened from disk starts a worker).
const worker = `${readFileSync(join(glue, 'capi2argo.js'), 'utf8')}\n${readFileSync(join(here, 'worker.js'), 'utf8')}`;
writeFileSync(join(out, 'worker-source.js'), `// The playground's worker: wasm-bindgen's glue and worker.js.\nconst CAPI2ARGO_WORKER = ${JSON.stringify(worker)};\n`);
const wasm = readFileSync(join(glue, 'capi2argo_bg.wasm'));
writeFileSync(join(out, 'capi2argo-wasm.js'), `// capi2argo's WebAssembly module, base64.\nconst CAPI2ARGO_WASM = "${wasm.toString('base64')}";\n`);

// The provider fixtures, kubeadm first (the README's quick start).
const names = {
  kubeadm: 'kubeadm / KCP (client certificate)', eks: 'EKS (token + aws-iam-authenticator)', 'eks-aws-cli': 'EKS (aws eks get-token)',
  gke: 'GKE (gke-gcloud-auth-plugin)', aks: 'AKS (kubelogin)', k3s: 'k3s', rke2: 'RKE2', rancher: 'Rancher', talos: 'Talos',
  vcluster: 'vcluster', rosa: 'ROSA (OAuth token)', insecure: 'hand-edited (insecure, proxy)',
};
const dir = join(root, 'tests', 'fixtures', 'providers');
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort((a, b) => (a === 'kubeadm.yaml' ? -1 : b === 'kubeadm.yaml' ? 1 : a.localeCompare(b)));
const examples = files.map((f) => ({ name: names[f.replace('.yaml', '')] || f, file: `tests/fixtures/providers/${f}`, text: readFileSync(join(dir, f), 'utf8') }));
// SIG Multicluster's ClusterProfiles, each kind of access provider; the settings its
// functionConfig holds (the clusterprofile source, the consumer's plugins) go into the page's
// settings, which are what the page runs with.
const profiles = join('tests', 'golden', 'source-clusterprofile', 'input.yaml');
const [profileItems, profileConfig] = readFileSync(join(root, profiles), 'utf8').split(/^functionConfig:\n/m);
const providers = profileConfig.split(/^ {4}accessProviders:\n/m)[1].replace(/^ {4}/gm, '');
examples.push({
  name: 'ClusterProfiles (Cluster Inventory API)', file: profiles, mode: 'convert', text: profileItems,
  settings: { sources: 'clusterprofile', accessProviders: providers },
});
// A fleet with its Argo CD Secrets, for plan mode: a cluster to create, one to update, one to
// rename (held), one to prune, one kept, one unchanged.
const planCase = join('tests', 'golden', 'plan-text', 'input.yaml');
examples.push({ name: 'Plan: a fleet with its Argo CD Secrets', file: planCase, mode: 'plan', text: readFileSync(join(root, planCase), 'utf8') });
// And with Argo CD's ApplicationSets and Applications: which Applications a change deletes or
// creates (the selectors and labels of Argo CD's own cluster generator tests).
const appsetCase = join('tests', 'golden', 'appset-label-selectors', 'input.yaml');
examples.push({ name: 'Plan: what ApplicationSets will do to Applications', file: appsetCase, mode: 'plan', text: readFileSync(join(root, appsetCase), 'utf8') });
writeFileSync(join(out, 'examples.js'), `// The provider fixtures of tests/fixtures/providers, ClusterProfiles, and fleets for plan mode.\nconst EXAMPLES = ${JSON.stringify(examples)};\n`);
console.log(`playground: ${out}/index.html (${examples.length} examples, module ${Math.round(wasm.length / 1024)} KiB)`);
