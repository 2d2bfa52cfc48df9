// The playground's worker: the capi2argo core (wasm-bindgen's no-modules glue, loaded before
// this file in the same blob) runs here, off the page's main thread, so a large paste never
// freezes typing. The page sends the module's bytes once, then jobs; each answer carries every
// view's text, where the credentials in it stand (the core's own rule) and how the text wraps
// into rows, so the page only draws what is on screen.
'use strict';

/* global wasm_bindgen */
let core;
// The last answer's texts, kept to wrap them again when the page changes width.
let views = {};
let viewsId = 0;

// What a hidden value shows in place of itself (the page draws the same text).
const PLACEHOLDER = '•••• hidden';

self.onmessage = (event) => {
  const job = event.data;
  try {
    if (job.type === 'init') {
      const bytes = Uint8Array.from(atob(job.wasm), (c) => c.charCodeAt(0));
      wasm_bindgen.initSync({ module: bytes });
      core = wasm_bindgen;
      self.postMessage({ type: 'ready', settings: core.settings() });
    } else if (job.type === 'run') {
      run(job);
    } else if (job.type === 'rows') {
      const rows = {};
      for (const [name, view] of Object.entries(views)) rows[name] = wrapBoth(view, job.widths[name]);
      self.postMessage({ type: 'rows', id: viewsId, widths: job.widths, rows }, transferables(rows));
    }
  } catch (e) {
    self.postMessage({ type: 'error', id: job.id, message: String((e && e.message) || e) });
  }
};

function run(job) {
  const started = performance.now();
  let text = job.input;
  let wrapped;
  // Only text that mentions a Config can be a bare kubeconfig: the core decides, but a large
  // paste of Secrets is not read twice for it.
  if (/["']?kind["']?\s*:\s*["']?Config\b/.test(text)) {
    wrapped = core.wrapKubeconfig(text);
    if (wrapped) text = wrapped.text;
  }
  const plan = job.mode === 'plan';
  let outcome;
  try {
    outcome = plan ? core.planWithResults(text, job.config) : core.transformWithResults(text, job.config);
  } catch (e) {
    outcome = { output: '', results: [{ severity: 'error', message: String((e && e.message) || e) }], failed: true, unusable: true };
  }
  const converted = performance.now();
  let secrets = [];
  if (outcome.output && !plan) {
    try { secrets = core.clusterSecrets(outcome.output); } catch (_) { /* output unusable as input: none */ }
  }
  const validate = job.mode === 'validate';
  const shown = validate ? secrets : secrets.filter((s) => s.owned);
  const generated = plan ? outcome.output : validate ? annotated(shown, outcome.results) : shown.map((s) => s.text).join('');
  // A plan names Secrets, clusters and fields, never a value: the core writes no credential
  // into one, and it is no YAML for the rule to read.
  const shownAs = plan ? plain : view;
  views = {
    generated: shownAs(generated),
    output: shownAs(outcome.output),
    // The input as pasted, for the page to show masked while nobody edits it.
    input: view(job.input),
  };
  viewsId = job.id;
  const rows = {};
  for (const [name, v] of Object.entries(views)) rows[name] = wrapBoth(v, job.widths[name]);
  const answer = {
    type: 'result',
    id: job.id,
    wrapped: wrapped || null,
    results: outcome.results,
    failed: outcome.failed,
    unusable: Boolean(outcome.unusable),
    json: /^\s*\{/.test(outcome.output),
    secretCount: shown.length,
    // The page has the input's text already: it travels one way only.
    views: Object.fromEntries(Object.entries(views).map(([k, v]) => [k, { text: k === 'input' ? undefined : v.text, masks: v.masks, error: v.error }])),
    rows,
    widths: job.widths,
    ...mapping(validate || plan ? '' : generated),
    timings: { convert: converted - started, total: performance.now() - started },
  };
  self.postMessage(answer, [...transferables(rows), ...Object.values(views).map((v) => v.masks.buffer)].filter(unique()));
}

const unique = () => { const seen = new Set(); return (b) => !seen.has(b) && seen.add(b); };
const transferables = (rows) => Object.values(rows).flatMap((r) => [r.masked.buffer, r.revealed.buffer]);

// A text and where its credentials stand (UTF-16 offsets, in pairs), by the core's rule: in
// text that is not YAML throughout, a broken document is hidden but for the key of the line
// a YAML error names. Should the rule fail, the text is hidden whole: nothing is
// shown that was not checked.
function view(text) {
  if (!text) return { text: '', masks: new Uint32Array(0) };
  try {
    return { text, masks: core.credentialRanges(text) };
  } catch (e) {
    return { text, masks: Uint32Array.of(0, text.length), error: String((e && e.message) || e) };
  }
}

// A text with nothing to hide.
function plain(text) {
  return { text: text || '', masks: new Uint32Array(0) };
}

// Every validated Secret with its findings beside it, as YAML comments under its `---`.
function annotated(secrets, results) {
  return secrets.map((s) => {
    const mine = results.filter((r) => r.resourceRef && r.resourceRef.kind === 'Secret'
      && r.resourceRef.name === s.name && (r.resourceRef.namespace || '') === (s.namespace || ''));
    const counts = ['error', 'warning', 'info'].map((sev) => [sev, mine.filter((r) => r.severity === sev).length])
      .filter(([, n]) => n).map(([sev, n]) => `${n} ${sev}${n > 1 ? 's' : ''}`);
    const notes = [`# validated ${s.namespace ? `${s.namespace}/` : ''}${s.name}: ${counts.length ? counts.join(', ') : 'no findings'}`]
      .concat(mine.map((r) => `# ${r.severity}${r.field ? ` ${r.field.path}` : ''}: ${r.message.replace(/\s+/g, ' ')}`));
    const body = s.text.startsWith('---\n') ? s.text.slice(4) : s.text;
    return `---\n${notes.join('\n')}\n${body}`;
  }).join('');
}

// Each generated Argo CD Secret: where it came from, its name and server, how it logs in; as
// shown (a server's user:password hidden, by the core's rule) and as revealed.
function mapping(generated) {
  const none = { mapping: [], mappingRevealed: [] };
  if (!generated) return none;
  let items = [];
  try { items = core.itemsJson(generated); } catch (_) { return none; }
  const rows = items.filter((s) => s && s.metadata).map((s) => {
    const l = s.metadata.labels || {};
    const data = s.stringData || Object.fromEntries(Object.entries(s.data || {}).map(([k, v]) => [k, decode(v)]));
    let login = 'none';
    try {
      const c = JSON.parse(data.config || '{}');
      const t = c.tlsClientConfig || {};
      login = c.awsAuthConfig ? `awsAuthConfig (${c.awsAuthConfig.clusterName})`
        : c.execProviderConfig ? ['exec', c.execProviderConfig.command].concat(words(c.execProviderConfig.args)).join(' ')
          : c.bearerToken ? 'bearer token' : t.certData ? 'client certificate' : c.username ? 'basic auth' : 'none';
      if (t.insecure) login += ', insecure';
    } catch (_) { login = 'config is not JSON'; }
    const server = String(data.server || '');
    const [from, to] = core.urlCredentials(server);
    const hidden = from === undefined ? server : `${server.slice(0, from)}${PLACEHOLDER}${server.slice(to)}`;
    const row = (srv) => [`${l['capi-to-argocd/cluster-namespace'] || ''}/${l['capi-to-argocd/cluster-secret-name'] || ''}`,
      `${s.metadata.namespace || ''}/${s.metadata.name || ''}`, `${data.name || ''} · ${srv}`, login];
    return [row(hidden), row(server)];
  });
  return { mapping: rows.map((r) => r[0]), mappingRevealed: rows.map((r) => r[1]) };
}

// A command's words up to its first flag (flag values may be credentials).
function words(args) {
  const out = [];
  for (const a of args || []) {
    if (String(a).startsWith('-')) break;
    out.push(a);
  }
  return out;
}

function decode(b64) {
  try { return new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))); } catch (_) { return ''; }
}

// Rows of at most `width` characters for the text as shown with its credentials hidden and
// as revealed: each row's start offset. A hidden value takes the placeholder's width and is
// never cut, and a line break inside it does not end its row.
function wrapBoth(v, width) {
  return { masked: wrap(v.text, v.masks, width), revealed: wrap(v.text, new Uint32Array(0), width) };
}

function wrap(text, masks, width) {
  const w = Math.max(8, width | 0);
  const starts = [];
  const n = text.length;
  let pos = 0;
  let m = 0;
  let nl = text.indexOf('\n');
  while (pos < n) {
    starts.push(pos);
    let col = 0;
    for (;;) {
      while (nl !== -1 && nl < pos) nl = text.indexOf('\n', pos);
      const lineEnd = nl === -1 ? n : nl;
      const maskStart = m < masks.length ? masks[m] : n + 1;
      if (maskStart <= lineEnd && maskStart - pos + col <= w) {
        // Text up to the hidden value, then its placeholder, on this row.
        if (col > 0 && maskStart - pos + col + PLACEHOLDER.length > w) {
          pos = maskStart;
          break;
        }
        col += maskStart - pos + PLACEHOLDER.length;
        pos = masks[m + 1];
        m += 2;
        if (pos >= n) break;
        continue;
      }
      if (lineEnd - pos + col <= w) {
        pos = lineEnd + 1;
        break;
      }
      let cut = pos + (w - col);
      // A surrogate pair stays whole.
      const c = text.charCodeAt(cut - 1);
      if (c >= 0xd800 && c <= 0xdbff && cut - 1 > pos) cut -= 1;
      pos = Math.max(cut, pos + 1);
      break;
    }
  }
  return Uint32Array.from(starts);
}
