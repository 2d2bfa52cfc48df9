// The playground: the capi2argo core (WebAssembly, bytes carried by the page) on what the user
// pastes, with settings generated from the function's own key table. Nothing is sent anywhere.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const input = $('input');
  const outputView = $('output');
  const generatedView = $('generated');
  const resultsView = $('results');
  const mappingView = $('mapping');
  const notice = $('notice');
  let last = { output: '', results: [], failed: false };

  // The module's bytes travel in capi2argo-wasm.js: compiling them needs no fetch, so the page
  // works from disk and under a CSP that forbids every connection.
  const bytes = Uint8Array.from(atob(CAPI2ARGO_WASM), (c) => c.charCodeAt(0));
  wasm_bindgen.initSync({ module: bytes });
  const core = wasm_bindgen;

  // Settings the page offers: every key but the mode (its own control) and files (a page has none).
  const SKIPPED = new Set(['action', 'resourceFiles']);
  const settings = core.settings().filter((s) => !SKIPPED.has(s.name));
  const form = $('settings');
  for (const s of settings) {
    const id = `setting-${s.name}`;
    const label = document.createElement('label');
    label.htmlFor = id;
    label.textContent = s.name;
    let field;
    if (s.kind === 'bool' || s.kind.startsWith('choice:')) {
      field = document.createElement('select');
      const options = s.kind === 'bool' ? ['true', 'false'] : s.kind.slice(7).split('|');
      field.append(new Option(`(default: ${s.default})`, ''));
      for (const o of options) field.append(new Option(o, o));
    } else if (s.kind === 'yaml' || s.kind === 'map' || s.kind === 'list') {
      field = document.createElement('textarea');
      field.placeholder = s.kind === 'yaml' ? 'YAML' : s.kind === 'map' ? 'k=v,k2=v2' : 'a,b';
    } else {
      field = document.createElement('input');
      field.type = 'text';
      field.placeholder = s.default === 'none' ? '' : s.default;
    }
    field.id = id;
    field.name = s.name;
    field.addEventListener('input', schedule);
    const doc = document.createElement('small');
    doc.textContent = s.doc.replace(/`/g, '');
    form.append(label, field, doc);
  }

  // The function's config: a ConfigMap, every value a string, as kpt sends settings.
  function config() {
    const data = {};
    if ($('mode').value === 'validate') data.action = 'validate';
    for (const field of form.elements) {
      if (field.name && field.value.trim() !== '') data[field.name] = field.value;
    }
    return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'playground' }, data };
  }

  // A bare kubeconfig is put into the Secret Cluster API would write for it.
  function wrapped(text) {
    if (!/^kind:\s*["']?Config["']?\s*$/m.test(text) || /^kind:\s*["']?(Secret|List|ResourceList)/m.test(text)) {
      return { text, note: '' };
    }
    const context = (text.match(/^current-context:\s*["']?([^"'\s]+)/m) || [])[1] || 'my-cluster';
    const name = context.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '') || 'my-cluster';
    const body = text.replace(/\s+$/, '').split('\n').map((l) => `    ${l}`).join('\n');
    return {
      text: `apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${name}-kubeconfig\n  namespace: default\n  labels:\n    cluster.x-k8s.io/cluster-name: ${name}\ntype: cluster.x-k8s.io/secret\nstringData:\n  value: |\n${body}\n`,
      note: `This is a bare kubeconfig: it was put into a Secret named ${name}-kubeconfig (namespace default), as Cluster API writes one.`,
    };
  }

  // Credentials are hidden in the view unless asked for; copy and download give the real output.
  const SECRET_JSON = /("(?:bearerToken|keyData|password|certData|caData)"\s*:\s*")([^"]*)(")/g;
  function masked(text) {
    let inEnv = false;
    return text.split('\n').map((line) => {
      if (/"env"\s*:\s*\{/.test(line)) { inEnv = true; return line; }
      if (inEnv && /^\s*\}/.test(line)) { inEnv = false; return line; }
      if (inEnv) return line.replace(/(:\s*")([^"]*)(")/, (_, a, v, b) => `${a}${hide(v)}${b}`);
      line = line.replace(SECRET_JSON, (_, a, v, b) => `${a}${hide(v)}${b}`);
      // Long base64 values (kubeconfigs, keys, tokens, a base64 config) in YAML.
      return line.replace(/^(\s*[\w.-]+:\s+)([A-Za-z0-9+/=]{40,})\s*$/, (_, a, v) => `${a}${hide(v)}`);
    }).join('\n');
  }
  const hide = (v) => (v === '' ? v : `•••• hidden (${v.length} characters)`);

  // The generated Argo CD Secrets alone, as the documents of a YAML stream (what `kubectl apply`
  // takes); for a ResourceList, whose items are not documents, the whole output.
  function generated() {
    if (/^kind: ResourceList$/m.test(last.output) || /^\s*\{/.test(last.output)) return last.output;
    return last.output.split(/^---[ \t]*$/m)
      .filter((doc) => /^\s+capi-to-argocd\/owned: "true"$/m.test(doc) && /^kind: Secret$/m.test(doc))
      .map((doc) => `---${doc.replace(/\n*$/, '\n')}`).join('');
  }

  // What Copy and Download take: the tab on show, unmasked.
  function shown() {
    return outputView.hidden ? generated() : last.output;
  }

  function render() {
    const view = (text) => ($('reveal').checked ? text : masked(text));
    outputView.textContent = view(last.output);
    generatedView.textContent = view(generated()) || (last.failed ? 'No Argo CD Secret: see Results.' : 'No Argo CD Secret in the output.');
    outputView.classList.toggle('failed', last.failed);
    $('result-count').textContent = last.results.length ? `(${last.results.length})` : '';
    resultsView.replaceChildren(...last.results.map((r) => {
      const div = document.createElement('div');
      div.className = `result ${r.severity}`;
      const where = [r.resourceRef && `${r.resourceRef.kind} ${r.resourceRef.namespace ? r.resourceRef.namespace + '/' : ''}${r.resourceRef.name}`,
        r.field && r.field.path].filter(Boolean).join(' · ');
      div.innerHTML = '<b></b> <span class="where"></span><div></div>';
      div.children[0].textContent = r.severity;
      div.children[1].textContent = where;
      div.children[2].textContent = r.message;
      return div;
    }));
    if (!last.results.length) resultsView.textContent = 'No results: nothing to report.';
    mappingView.replaceChildren(mapping());
  }

  // What was converted from where: each Argo CD Secret, the kubeconfig Secret it came from, and
  // how it logs in.
  function mapping() {
    let items = [];
    try { items = core.itemsJson(last.output); } catch (_) { /* unusable input: nothing to map */ }
    const argo = items.filter((i) => i && i.kind === 'Secret' && i.metadata && i.metadata.labels
      && i.metadata.labels['capi-to-argocd/owned'] === 'true');
    const table = document.createElement('table');
    table.innerHTML = '<thead><tr><th>from</th><th>Argo CD Secret</th><th>name · server</th><th>login</th></tr></thead><tbody></tbody>';
    for (const s of argo) {
      const l = s.metadata.labels;
      const data = s.stringData || Object.fromEntries(Object.entries(s.data || {}).map(([k, v]) => [k, atob(v)]));
      let login = 'none';
      try {
        const c = JSON.parse(data.config || '{}');
        const t = c.tlsClientConfig || {};
        login = c.awsAuthConfig ? `awsAuthConfig (${c.awsAuthConfig.clusterName})`
          : c.execProviderConfig ? `exec ${c.execProviderConfig.command} ${(c.execProviderConfig.args || []).join(' ')}`
            : c.bearerToken ? 'bearer token' : t.certData ? 'client certificate' : c.username ? 'basic auth' : 'none';
        if (t.insecure) login += ', insecure';
      } catch (_) { login = 'config is not JSON'; }
      const row = document.createElement('tr');
      for (const cell of [`${l['capi-to-argocd/cluster-namespace'] || ''}/${l['capi-to-argocd/cluster-secret-name'] || ''}`,
        `${s.metadata.namespace}/${s.metadata.name}`, `${data.name || ''} · ${data.server || ''}`, login]) {
        const td = document.createElement('td');
        const code = document.createElement('code');
        code.textContent = cell;
        td.append(code);
        row.append(td);
      }
      table.tBodies[0].append(row);
    }
    if (!argo.length) {
      const p = document.createElement('p');
      p.textContent = $('mode').value === 'validate' ? 'Validation changes nothing: see Results.' : 'No Argo CD cluster Secret in the output.';
      return p;
    }
    return table;
  }

  function run() {
    const { text, note } = wrapped(input.value);
    notice.textContent = note;
    try {
      last = core.transformWithResults(text, config());
    } catch (e) {
      last = { output: '', results: [{ severity: 'error', message: String(e.message || e) }], failed: true };
    }
    render();
    document.body.dataset.runs = String(Number(document.body.dataset.runs || 0) + 1);
    return last;
  }

  let timer;
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(run, 200);
  }

  const examples = $('example');
  for (const e of EXAMPLES) examples.append(new Option(e.name, e.name));
  examples.addEventListener('change', () => {
    const e = EXAMPLES.find((x) => x.name === examples.value);
    if (e) { input.value = e.text; run(); }
  });
  input.addEventListener('input', () => { examples.value = ''; schedule(); });
  $('mode').addEventListener('change', run);
  $('reveal').addEventListener('change', render);
  for (const tab of document.querySelectorAll('[role=tab]')) {
    tab.addEventListener('click', () => {
      for (const t of document.querySelectorAll('[role=tab]')) t.setAttribute('aria-selected', String(t === tab));
      for (const p of document.querySelectorAll('.tab')) p.hidden = p.dataset.tab !== tab.dataset.tab;
    });
  }
  $('copy').addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(shown());
    } catch (_) {
      const area = document.createElement('textarea');
      area.value = shown();
      document.body.append(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
  });
  $('download').addEventListener('click', () => {
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([shown()], { type: 'application/yaml' }));
    a.download = $('mode').value === 'validate' ? 'validated.yaml' : 'argocd-cluster-secrets.yaml';
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  });

  examples.value = EXAMPLES[0].name;
  input.value = EXAMPLES[0].text;
  run();
  window.playground = { run, config, generated, ready: true };
})();
