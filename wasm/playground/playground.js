// The playground: the capi2argo core (WebAssembly, bytes carried by the page) on what the user
// pastes, with settings generated from the function's own key table. The core runs in a Web
// Worker, never on this thread: typing stays responsive whatever the paste's size, and the
// views draw only what is on screen. Nothing is sent anywhere.
'use strict';

/* global CAPI2ARGO_WASM, CAPI2ARGO_WORKER, EXAMPLES, TextView */
(function () {
  const $ = (id) => document.getElementById(id);
  const input = $('input');
  const form = $('settings');
  const examples = $('example');
  const mode = $('mode');
  const status = $('status');
  const notice = $('notice');
  const outputPane = $('output-pane');
  const PLACEHOLDER = '•••• hidden';
  const LARGE_PASTE = 256 * 1024;
  const TABS = ['generated', 'output', 'results', 'mapping'];
  const views = {
    generated: new TextView($('panel-generated'), PLACEHOLDER),
    output: new TextView($('panel-output'), PLACEHOLDER),
    input: new TextView($('input-view'), PLACEHOLDER),
  };
  // The text each job carried, by job: the worker's answer does not send the input back.
  const sentInputs = new Map();
  let last = null;
  let tab = 'generated';

  // The worker: wasm-bindgen's glue and the worker's own code, as one script the page carries
  // (a page opened from disk may not start a worker from a file, but may from a blob: URL of
  // its own making). It gets the module's bytes once, then jobs.
  const worker = new Worker(URL.createObjectURL(new Blob([CAPI2ARGO_WORKER], { type: 'text/javascript' })));
  worker.postMessage({ type: 'init', wasm: CAPI2ARGO_WASM });

  let jobs = 0; // jobs sent
  let busy = false;
  let again = false; // the input changed while the worker was busy
  const waiting = []; // run() promises, each resolved by the first answer at or past its job
  let ready = false;

  worker.onmessage = (event) => {
    const msg = event.data;
    if (msg.type === 'ready') {
      ready = true;
      buildSettings(msg.settings);
      send();
    } else if (msg.type === 'result' || msg.type === 'error') {
      busy = false;
      if (again) {
        // A newer input is waiting: this answer is already stale, the next one is not.
        send();
        return;
      }
      working(false);
      if (msg.type === 'error') {
        status.textContent = `Internal error: ${msg.message}`;
      } else {
        render(msg);
      }
      settle(msg.id);
    } else if (msg.type === 'rows' && last && msg.id === last.id) {
      last.widths = msg.widths;
      for (const [name, rows] of Object.entries(msg.rows)) {
        last.views[name].rows = rows;
        views[name].rewrap(rows);
      }
    }
  };

  function settle(id) {
    for (let i = waiting.length - 1; i >= 0; i--) {
      if (waiting[i].id <= id) {
        waiting[i].resolve(last);
        waiting.splice(i, 1);
      }
    }
  }

  // Settings the page offers: every key but the mode (its own control) and files (a page has none).
  const SKIPPED = new Set(['action', 'resourceFiles']);
  function buildSettings(keys) {
    for (const s of keys.filter((k) => !SKIPPED.has(k.name))) {
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
      } else if (s.kind === 'yaml' || s.kind === 'map' || s.kind === 'list' || s.kind === 'pem') {
        field = document.createElement('textarea');
        const placeholders = { yaml: 'YAML', map: 'k=v,k2=v2', list: 'a,b', pem: '-----BEGIN CERTIFICATE-----' };
        field.placeholder = placeholders[s.kind];
      } else {
        field = document.createElement('input');
        field.type = 'text';
        field.placeholder = s.default === 'none' ? '' : s.default;
      }
      field.id = id;
      field.name = s.name;
      field.setAttribute('aria-describedby', `${id}-doc`);
      field.addEventListener('input', schedule);
      const doc = document.createElement('small');
      doc.id = `${id}-doc`;
      doc.textContent = s.doc.replace(/`/g, '');
      form.append(label, field, doc);
    }
  }

  // The function's config: a ConfigMap, every value a string, as kpt sends settings.
  function config() {
    const data = {};
    if (mode.value === 'validate') data.action = 'validate';
    for (const field of form.elements) {
      if (field.name && field.value.trim() !== '') data[field.name] = field.value;
    }
    return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'playground' }, data };
  }

  // Sends the current input to the worker, or notes that it must be sent once it is free.
  function send() {
    if (!ready) return;
    if (busy) {
      again = true;
      return;
    }
    again = false;
    busy = true;
    working(true);
    jobs += 1;
    const text = input.value;
    sentInputs.set(jobs, text);
    worker.postMessage({ type: 'run', id: jobs, input: text, config: config(), mode: mode.value, widths: widths() });
  }

  function widths() {
    return Object.fromEntries(Object.entries(views).map(([name, v]) => [name, v.width()]));
  }

  function working(on) {
    outputPane.setAttribute('aria-busy', String(on));
    document.body.classList.toggle('working', on);
    if (on) status.textContent = 'Working…';
  }

  let timer;
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(send, 200);
  }

  /** Runs now; resolves with the answer to this input once it is shown. */
  function run() {
    clearTimeout(timer);
    // This input goes out as the next job, now or once the worker is free.
    const promise = new Promise((resolve) => waiting.push({ id: jobs + 1, resolve }));
    send();
    return promise;
  }

  function render(answer) {
    // The output travels once, as its view's text; the input not at all.
    answer.output = answer.views.output.text;
    answer.views.input.text = sentInputs.get(answer.id);
    for (const id of sentInputs.keys()) if (id <= answer.id) sentInputs.delete(id);
    last = answer;
    const validate = mode.value === 'validate';
    const plan = mode.value === 'plan';
    const w = answer.wrapped;
    notice.textContent = w
      ? `This is a bare kubeconfig: it was put into a Secret named ${w.secretName} (namespace ${w.namespace}), labelled cluster.x-k8s.io/cluster-name: ${w.cluster}, as Cluster API writes one for cluster entry ${w.clusterEntry}.`
      : '';
    for (const name of ['generated', 'output', 'input']) answer.views[name].rows = answer.rows[name];
    $('tab-generated').firstChild.textContent = plan ? 'Plan' : 'Argo CD Secrets';
    views.generated.show(answer.views.generated, plan
      ? 'No plan: see Results.'
      : validate
        ? 'No Argo CD cluster Secret (label argocd.argoproj.io/secret-type: cluster) in the input: nothing to validate. See Results.'
        : answer.failed ? 'No Argo CD Secret: see Results.' : 'No Argo CD Secret in the output.');
    views.output.show(answer.views.output, 'No output: see Results.');
    $('panel-output').classList.toggle('failed', answer.failed);
    const counted = severities(answer.results);
    $('result-count').textContent = answer.results.length ? `(${counted})` : '';
    drawn.results = drawn.mapping = false;
    drawPanel();
    inputView();
    fileName();
    const n = answer.secretCount;
    const summary = plan ? planSummary(answer.output)
      : validate ? `${n} cluster Secret${n === 1 ? '' : 's'} validated` : `${n} Argo CD Secret${n === 1 ? '' : 's'}`;
    const ms = answer.timings.total < 1 ? 'under 1' : Math.round(answer.timings.total);
    status.textContent = `${summary}; ${answer.results.length ? counted : 'no results'} (${ms} ms in the worker).`;
    document.body.dataset.runs = String(Number(document.body.dataset.runs || 0) + 1);
  }

  // The plan's count line, and the way through when a guard holds the run: the plan ends with a
  // "held:" line after its counts, so its last line alone would hide the counts.
  function planSummary(output) {
    const lines = output.split('\n');
    const counts = lines.filter((l) => l.startsWith('plan: ')).pop();
    const held = lines.filter((l) => l.startsWith('held: ')).pop();
    return [counts || 'no plan', held].filter(Boolean).join('; ');
  }

  // "1 error, 2 warnings, 1 info": what the results are, errors first, so an error is never
  // just one of "2 results".
  function severities(results) {
    return ['error', 'warning', 'info'].map((sev) => [sev, results.filter((r) => r.severity === sev).length])
      .filter(([, k]) => k).map(([sev, k]) => `${k} ${sev}${k > 1 && sev !== 'info' ? 's' : ''}`).join(', ');
  }

  // While nobody edits it, the input shows masked as the outputs do: a screen share of the page
  // shows no credential of the paste either. Text not yet checked by the worker is hidden
  // whole until it is.
  const NOT_CHECKED = { text: '', masks: new Uint32Array(0), rows: { masked: new Uint32Array(0), revealed: new Uint32Array(0) } };
  function inputView() {
    const box = $('input-view');
    const show = document.activeElement !== input && !$('reveal').checked && input.value !== '';
    box.hidden = !show;
    if (!show) return;
    const current = last && last.views.input.text === input.value;
    if (views.input.doc !== (current ? last.views.input : NOT_CHECKED)) {
      views.input.show(current ? last.views.input : NOT_CHECKED, `${PLACEHOLDER}: the input shows once checked for credentials (or while you edit it).`);
    }
    followInput();
  }

  // The masked view stands where the text box is scrolled to.
  function followInput() {
    const el = $('input-view');
    const range = input.scrollHeight - input.clientHeight;
    el.scrollTop = range > 0 ? (input.scrollTop / range) * (el.scrollHeight - el.clientHeight) : 0;
    views.input.render();
  }

  input.addEventListener('focus', inputView);
  input.addEventListener('blur', inputView);
  input.addEventListener('scroll', () => {
    if (!$('input-view').hidden) followInput();
  });

  // The results and the From → to table are drawn when their tab is shown, in slices, so a
  // fleet's thousands of rows never hold the page.
  const drawn = { results: false, mapping: false };
  let slicing = 0;
  function drawPanel() {
    if (!last || !(tab in drawn) || drawn[tab]) return;
    drawn[tab] = true;
    const panel = $(`panel-${tab}`);
    const generation = ++slicing;
    if (tab === 'results') {
      if (!last.results.length) {
        panel.replaceChildren(paragraph('No results: nothing to report.'));
        return;
      }
      const list = document.createElement('ol');
      list.className = 'results';
      panel.replaceChildren(list);
      sliced(last.results, (r) => resultItem(r), list, generation);
    } else {
      if (!last.mapping.length) {
        panel.replaceChildren(paragraph(mode.value === 'validate' ? 'Validation changes nothing: see the Argo CD Secrets and Results tabs.' : 'No Argo CD cluster Secret in the output.'));
        return;
      }
      const table = document.createElement('table');
      const head = table.createTHead().insertRow();
      for (const h of MAPPING_HEAD) {
        const th = document.createElement('th');
        th.scope = 'col';
        th.textContent = h;
        head.append(th);
      }
      const body = table.createTBody();
      panel.replaceChildren(table);
      sliced($('reveal').checked ? last.mappingRevealed : last.mapping, (cells) => {
        const tr = document.createElement('tr');
        for (const cell of cells) {
          const td = document.createElement('td');
          const code = document.createElement('code');
          code.textContent = cell;
          td.append(code);
          tr.append(td);
        }
        return tr;
      }, body, generation);
    }
  }

  function sliced(items, make, into, generation, from = 0) {
    if (generation !== slicing) return;
    const panel = into.closest('[role=tabpanel]');
    const frag = document.createDocumentFragment();
    const to = Math.min(items.length, from + 200);
    for (let i = from; i < to; i++) frag.append(make(items[i]));
    into.append(frag);
    if (to < items.length) {
      panel.dataset.pending = 'true';
      setTimeout(() => sliced(items, make, into, generation, to), 0);
    } else {
      delete panel.dataset.pending;
    }
  }

  const paragraph = (text) => {
    const p = document.createElement('p');
    p.className = 'empty';
    p.textContent = text;
    return p;
  };

  const MAPPING_HEAD = ['from', 'Argo CD Secret', 'name · server', 'login'];

  // One result as one line of text: the list item reads exactly as the downloaded line.
  function resultParts(r) {
    const ref = r.resourceRef;
    const where = [ref && `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`, r.field && r.field.path].filter(Boolean).join(' · ');
    return [r.severity, where ? ` · ${where}` : '', `: ${r.message}`];
  }

  function resultItem(r) {
    const li = document.createElement('li');
    li.className = `result ${r.severity}`;
    const [severity, where, message] = resultParts(r);
    const b = document.createElement('b');
    b.textContent = severity;
    const w = document.createElement('span');
    w.className = 'where';
    w.textContent = where;
    const m = document.createElement('span');
    m.className = 'message';
    m.textContent = message;
    li.append(b, w, m);
    return li;
  }

  // What Copy and Download take: the text of the tab on show, with the real values (the mask
  // is for the screen), and a file name that says what it is.
  function shown() {
    if (!last) return { text: '', name: '' };
    const validate = mode.value === 'validate';
    const plan = mode.value === 'plan';
    switch (tab) {
      case 'generated':
        if (plan) return { text: last.views.generated.text, name: 'capi2argo-plan.txt' };
        return { text: last.views.generated.text, name: validate ? 'validated-argocd-cluster-secrets.yaml' : 'argocd-cluster-secrets.yaml' };
      case 'output':
        if (plan) return { text: last.output, name: 'capi2argo-plan.txt' };
        return { text: last.output, name: `capi2argo-${validate ? 'validate' : 'convert'}-output.${last.json ? 'json' : 'yaml'}` };
      case 'results':
        return { text: last.results.map((r) => `${resultParts(r).join('')}\n`).join(''), name: 'capi2argo-results.txt' };
      default:
        return { text: last.mapping.length ? [MAPPING_HEAD, ...last.mappingRevealed].map((row) => `${row.join('\t')}\n`).join('') : '', name: 'capi2argo-from-to.tsv' };
    }
  }

  function fileName() {
    const { text, name } = shown();
    $('file-name').textContent = name;
    $('copy').disabled = !text;
    $('download').disabled = !text;
  }

  // Tabs, as the WAI-ARIA tabs pattern has them: arrow keys, Home and End move between tabs
  // and show each, and only the selected tab is in the Tab order.
  const tabButtons = TABS.map((t) => $(`tab-${t}`));
  function select(name, focus) {
    tab = name;
    for (const b of tabButtons) {
      const on = b.id === `tab-${name}`;
      b.setAttribute('aria-selected', String(on));
      b.tabIndex = on ? 0 : -1;
      if (on && focus) b.focus();
    }
    for (const t of TABS) $(`panel-${t}`).hidden = t !== name;
    if (views[name]) views[name].render();
    drawPanel();
    fileName();
  }
  for (const b of tabButtons) {
    b.addEventListener('click', () => select(b.id.slice(4), false));
    b.addEventListener('keydown', (e) => {
      const i = tabButtons.indexOf(b);
      const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: TABS.length - 1 }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      select(TABS[(to + TABS.length) % TABS.length], true);
    });
  }

  $('reveal').addEventListener('change', () => {
    for (const v of Object.values(views)) v.reveal($('reveal').checked);
    drawn.mapping = false;
    drawPanel();
    inputView();
  });

  $('copy').addEventListener('click', async () => {
    const { text } = shown();
    try {
      await navigator.clipboard.writeText(text);
    } catch (_) {
      const area = document.createElement('textarea');
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    status.textContent = `Copied ${shown().name.replace(/\.[a-z]+$/, '')} to the clipboard.`;
  });
  $('download').addEventListener('click', () => {
    const { text, name } = shown();
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([text], { type: name.endsWith('.json') ? 'application/json' : name.endsWith('.yaml') ? 'application/yaml' : 'text/plain' }));
    a.download = name;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  });

  // A change of width wraps the texts again, in the worker.
  new ResizeObserver(() => {
    if (!last) return;
    const now = widths();
    if (Object.keys(now).some((k) => now[k] !== last.widths[k])) worker.postMessage({ type: 'rows', id: last.id, widths: now });
    for (const v of Object.values(views)) v.schedule();
  }).observe(document.querySelector('main'));

  for (const e of EXAMPLES) examples.append(new Option(e.name, e.name));
  // The settings an example needs go into the form (and out again with the next example).
  let exampleSettings = [];
  function applySettings(settings) {
    for (const name of exampleSettings) form.elements[name].value = '';
    exampleSettings = Object.keys(settings || {});
    for (const [name, value] of Object.entries(settings || {})) form.elements[name].value = value;
  }
  examples.addEventListener('change', () => {
    const e = EXAMPLES.find((x) => x.name === examples.value);
    if (e) {
      applySettings(e.settings);
      input.value = e.text;
      if (e.mode && mode.value !== e.mode) {
        mode.value = e.mode;
        select(tab, false);
      }
      inputView();
      send();
    }
  });
  input.addEventListener('input', () => {
    examples.value = '';
    schedule();
  });
  // A large paste goes straight into the text, not through the editor's paste path: Chromium
  // takes seconds to paste megabytes into a textarea that way (8.4 s for 5 MB, measured), and
  // the page freezes meanwhile. The price is that such a paste cannot be undone with Ctrl+Z.
  input.addEventListener('paste', (e) => {
    const text = e.clipboardData && e.clipboardData.getData('text/plain');
    if (!text || text.length < LARGE_PASTE) return;
    e.preventDefault();
    input.setRangeText(text, input.selectionStart, input.selectionEnd, 'end');
    input.dispatchEvent(new InputEvent('input', { inputType: 'insertFromPaste' }));
  });
  mode.addEventListener('change', () => {
    // A provider example has nothing to plan against: plan mode brings its own fleet.
    const current = EXAMPLES.find((x) => x.name === examples.value);
    const fleet = EXAMPLES.find((x) => x.mode === 'plan');
    if (mode.value === 'plan' && current && !current.mode && fleet) {
      examples.value = fleet.name;
      input.value = fleet.text;
      inputView();
    }
    select(tab, false);
    send();
  });

  examples.value = EXAMPLES[0].name;
  input.value = EXAMPLES[0].text;
  // Masked from the first paint: the example's credentials are hidden before the worker has
  // even started, and show as the rule allows once it has checked them.
  inputView();
  window.playground = {
    run,
    config,
    shown,
    get last() { return last; },
    get ready() { return ready && last !== null; },
  };
})();
