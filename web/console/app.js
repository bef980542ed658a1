// SPDX-License-Identifier: Apache-2.0
// The TensorFusion web console: views over the JSON API of the server that serves it
// (tf-hypervisor locally, tf-controller in a cluster; docs/console.md). Plain JavaScript, no
// build step; charts with uPlot (vendor/). Data is only ever put in the page as text nodes.
'use strict';

(function () {
  const API = '/api/v1/console';
  const TOKEN_KEY = 'tf-console-token';
  const RANGE_KEY = 'tf-console-range';
  const COLORS = ['#1f6feb', '#d1242f', '#1a7f37', '#9a6700', '#8250df', '#bf3989', '#0a7ea4',
    '#57606a'];
  const main = document.getElementById('main');
  let range = sessionStorage.getItem(RANGE_KEY) || '1h';
  let timer = null;
  let generation = 0;
  window.tfCharts = [];

  // ---- formatting --------------------------------------------------------------------------

  function num(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return '–';
    const d = digits === undefined ? (Math.abs(v) >= 1000 ? 0 : Math.abs(v) >= 10 ? 1 : 2) : digits;
    return Number(v).toFixed(d).replace(/\.0+$|(\.\d*?)0+$/, '$1');
  }
  function tflops(v) { return v === null || v === undefined ? '–' : num(v) + ' TFLOPS'; }
  function bytes(v) {
    if (v === null || v === undefined) return '–';
    const gib = v / 1073741824;
    if (gib >= 1 || v === 0) return num(gib) + ' GiB';
    return num(v / 1048576) + ' MiB';
  }
  function pct(v) { return v === null || v === undefined ? '–' : num(v, 1) + ' %'; }
  function when(ms) { return ms ? new Date(ms).toLocaleString() : '–'; }
  function shortUuid(u) { return u && u.length > 16 ? u.slice(0, 12) + '…' + u.slice(-4) : u; }

  // ---- DOM ---------------------------------------------------------------------------------

  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'style') e.style.cssText = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return e;
  }
  function table(cols, rows, empty) {
    if (!rows.length) return h('p', { class: 'muted' }, empty || 'Nothing here.');
    return h('div', { class: 'scroll' }, h('table', {},
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', { class: c.num ? 'num' : null }, c.title)))),
      h('tbody', {}, rows.map((r) => h('tr', { class: r._class || null },
        cols.map((c) => h('td', { class: c.num ? 'num' : null }, c.get(r))))))));
  }
  // A capacity bar: allocated (solid) and used (dark) as shares of the capacity.
  function meter(cap, alloc, used) {
    const w = (v) => (cap > 0 && v !== null && v !== undefined
      ? Math.max(0, Math.min(100, (100 * v) / cap)) : 0);
    const bar = h('div', { class: 'meter', title: 'allocated ' + num(w(alloc), 1) + ' %, used ' +
      (used === null || used === undefined ? '–' : num(w(used), 1) + ' %') });
    bar.append(h('span', { class: 'alloc' }), h('span', { class: 'used' }));
    bar.children[0].style.width = w(alloc) + '%';
    bar.children[1].style.width = w(used) + '%';
    return bar;
  }
  function link(href, text) { return h('a', { href }, text); }
  function gpuLink(uuid, label) { return link('#/gpu/' + encodeURIComponent(uuid), label || shortUuid(uuid)); }
  function wlLink(ns, name) {
    return link('#/workload/' + encodeURIComponent(ns) + '/' + encodeURIComponent(name), ns + '/' + name);
  }
  function warnings(list) {
    if (!list || !list.length) return '';
    return h('div', { class: 'warn' }, list.map((w) => h('div', {}, w)));
  }
  function card(title, big, ...lines) {
    return h('div', { class: 'card' }, h('div', { class: 'card-title' }, title),
      h('div', { class: 'card-big' }, big), lines.map((l) => h('div', { class: 'card-line' }, l)));
  }

  // ---- API ---------------------------------------------------------------------------------

  class Unauthorized extends Error {}
  async function api(path) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) throw new Unauthorized('Sign in with the API token.');
    const sep = path.includes('?') ? '&' : '?';
    const r = await fetch(API + path + sep + 'range=' + encodeURIComponent(range), {
      headers: { Authorization: 'Bearer ' + token }, cache: 'no-store',
    });
    if (r.status === 401) throw new Unauthorized('The token was not accepted.');
    const body = await r.json().catch(() => ({ error: 'HTTP ' + r.status }));
    if (!r.ok) throw new Error(body.error || 'HTTP ' + r.status);
    return body;
  }

  // ---- charts ------------------------------------------------------------------------------

  // A time-series chart of SERIES ({label, values, color, dash, width}) on the time axis T
  // (seconds); FMT formats values in the legend, AXIS (default FMT) on the y axis.
  function chart(el, title, t, series, fmt, axis) {
    const box = h('div', { class: 'chart' }, h('h3', {}, title));
    el.append(box);
    const data = [t];
    const opts = {
      width: Math.max(320, Math.min(box.clientWidth || 900, 1100)),
      height: 220,
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      series: [{}],
      axes: [{}, { values: (u, vals) => vals.map((v) => (axis || fmt)(v)), size: 80 }],
      legend: { live: true },
    };
    let any = false;
    series.forEach((s, i) => {
      if (!s.values) return;
      const n = s.values.filter((v) => v !== null).length;
      any = any || n > 0;
      data.push(s.values);
      opts.series.push({
        label: s.label, stroke: s.color || COLORS[i % COLORS.length], width: s.width || 2,
        dash: s.dash, value: (u, v) => (v === null ? '–' : fmt(v)),
        points: { show: n < 60, size: 5 },
      });
    });
    if (!any) box.append(h('p', { class: 'muted nodata' }, 'No samples in this range yet.'));
    const u = new uPlot(opts, data, box);
    window.tfCharts.push(u);
    return u;
  }

  // ---- views -------------------------------------------------------------------------------

  async function overview(el) {
    const [o, ev] = await Promise.all([api('/overview'), api('/events').catch(() => null)]);
    setWhere(o.mode);
    const t = o.totals;
    el.append(h('h1', {}, 'Overview'),
      h('p', { class: 'muted' }, 'Capacity, what is allocated now, and what was used over the last ' +
        rangeText() + ' (average TFLOPS, peak VRAM), per pool, node, GPU and workload.'),
      warnings(o.warnings),
      h('div', { class: 'cards' },
        card('GPUs', String(t.gpus), t.nodes + ' node(s), ' + t.pools + ' pool(s)', t.workloads + ' workload(s) running'),
        card('Compute', tflops(t.tflops.capacity), meter(t.tflops.capacity, t.tflops.allocated, t.tflops.used),
          'allocated ' + tflops(t.tflops.allocated) + ' (' + pct(t.tflops.allocatedPercent) + ')',
          'used ' + tflops(t.tflops.used) + ' (' + pct(t.tflops.usedPercent) + ')'),
        card('VRAM', bytes(t.vram.capacity), meter(t.vram.capacity, t.vram.allocated, t.vram.used),
          'allocated ' + bytes(t.vram.allocated) + ' (' + pct(t.vram.allocatedPercent) + ')',
          'peak used ' + bytes(t.vram.used) + ' (' + pct(t.vram.usedPercent) + ')'),
        card('Requested but unused', tflops(t.tflops.requestedUnused), bytes(t.vram.requestedUnused) + ' of VRAM',
          'requests above what workloads used: lower them, or let the autoscaler'),
        card('Spread', t.nodesUnderAllocated + ' under ' + num(t.underAllocatedPercent) + ' %',
          t.nodesEmpty + ' node(s) with nothing allocated', 'candidates for compaction and defragmentation')));

    el.append(h('h2', {}, 'Nodes'), table([
      { title: 'Node', get: (n) => n.name },
      { title: 'Pool', get: (n) => n.pool },
      { title: 'GPUs', num: true, get: (n) => n.gpus },
      { title: 'TFLOPS', get: (n) => meter(n.tflops.capacity, n.tflops.allocated, n.tflops.used) },
      { title: 'allocated', num: true, get: (n) => pct(n.tflops.allocatedPercent) },
      { title: 'avg allocated', num: true, get: (n) => pct(n.tflops.allocatedPercentAvg) },
      { title: 'used', num: true, get: (n) => pct(n.tflops.usedPercent) },
      { title: 'VRAM', get: (n) => meter(n.vram.capacity, n.vram.allocated, n.vram.used) },
      { title: 'allocated', num: true, get: (n) => pct(n.vram.allocatedPercent) },
      { title: 'peak used', num: true, get: (n) => pct(n.vram.usedPercent) },
    ], o.nodes, 'No nodes.'));

    el.append(h('h2', {}, 'GPUs'), table([
      { title: 'GPU', get: (g) => gpuLink(g.uuid, (g.model || 'GPU') + ' ' + shortUuid(g.uuid)) },
      { title: 'Node', get: (g) => g.node },
      { title: 'Compute', get: (g) => meter(g.tflops, g.allocatedTflops, g.usage ? g.usage.tflopsAvg : null) },
      { title: 'allocated', num: true, get: (g) => num(g.allocatedTflops) + ' / ' + num(g.tflops) },
      { title: 'used avg', num: true, get: (g) => (g.usage ? pct(g.usage.computeAvgPercent) : '–') },
      { title: 'VRAM', get: (g) => meter(g.vramBytes, g.allocatedVramBytes, g.usage ? g.usage.vramPeakBytes : null) },
      { title: 'allocated', num: true, get: (g) => bytes(g.allocatedVramBytes) + ' / ' + bytes(g.vramBytes) },
      { title: 'peak', num: true, get: (g) => (g.usage ? bytes(g.usage.vramPeakBytes) : '–') },
      { title: 'Workloads', get: (g) => (g.workloads.length
        ? g.workloads.map((w, i) => [i ? ', ' : '', wlLink(w.namespace, w.name)]) : 'none') },
    ], o.gpus, 'No GPUs found.'));

    el.append(h('h2', {}, 'Workloads'), table([
      { title: 'Workload', get: (w) => wlLink(w.namespace, w.name) },
      { title: 'Pool', get: (w) => w.pool },
      { title: 'QoS', get: (w) => w.qos || '–' },
      { title: 'Isolation', get: (w) => w.isolation || '–' },
      { title: 'GPUs', num: true, get: (w) => (w.active ? w.gpus.length : 'ended') },
      { title: 'TFLOPS request / limit', num: true, get: (w) => (w.active ? num(w.tflopsRequest) + ' / ' + num(w.tflopsLimit) +
        (w.computePercentLimit ? ' (' + num(w.computePercentLimit) + ' %)' : '') : '–') },
      { title: 'used avg / peak', num: true, get: (w) => (w.usage ? num(w.usage.tflopsAvg) + ' / ' + num(w.usage.tflopsPeak) : '–') },
      { title: 'VRAM request / limit', num: true, get: (w) => (w.active ? bytes(w.vramRequestBytes) + ' / ' + bytes(w.vramLimitBytes) : '–') },
      { title: 'peak used', num: true, get: (w) => (w.usage ? bytes(w.usage.vramPeakBytes) : '–') },
      { title: 'unused request', num: true, get: (w) => (w.unused ? tflops(w.unused.tflops) + ', ' + bytes(w.unused.vramBytes) : '–') },
      { title: 'throttled', num: true, get: (w) => (w.usage && w.usage.throttled !== undefined ? w.usage.throttled : '–') },
    ], o.workloads.map((w) => Object.assign({ _class: w.active ? null : 'ended' }, w)),
    'No workloads in this range.'));

    if (ev && ev.events.length) {
      el.append(h('h2', {}, 'Recent actions'), eventsTable(ev.events.slice(0, 5)),
        h('p', {}, link('#/actions', 'All efficiency actions and refusals →')));
    }
  }

  async function gpuView(el, uuid) {
    const o = await api('/gpus/' + encodeURIComponent(uuid));
    setWhere(o.mode);
    const g = o.gpu;
    el.append(h('p', { class: 'crumbs' }, link('#/', 'Overview'), ' › GPU'),
      h('h1', {}, (g.model || 'GPU') + ' ', h('code', {}, g.uuid)),
      warnings(o.warnings),
      h('div', { class: 'cards' },
        card('Node', g.node || '–', 'pool ' + (g.pool || '–'), g.isolation ? 'isolation ' + g.isolation : 'no workload'),
        card('Compute', tflops(g.tflops), meter(g.tflops, g.allocatedTflops, null),
          'allocated ' + tflops(g.allocatedTflops), 'utilisation now ' + pct(g.utilizationPercent)),
        card('VRAM', bytes(g.vramBytes), meter(g.vramBytes, g.allocatedVramBytes, g.memoryUsedBytes),
          'allocated ' + bytes(g.allocatedVramBytes), 'in use now ' + bytes(g.memoryUsedBytes))));
    const t = o.series.t;
    const per = o.workloadSeries || [];
    chart(el, 'Utilisation (% of the GPU)', t,
      [{ label: 'GPU', values: o.series.computePercent, width: 3, color: '#24292f' }]
        .concat(per.map((w, i) => ({ label: w.namespace + '/' + w.name, values: w.computePercent,
          color: COLORS[i % COLORS.length] }))), (v) => num(v, 0) + ' %');
    chart(el, 'VRAM in use', t,
      [{ label: 'GPU', values: o.series.vramBytes, width: 3, color: '#24292f' }]
        .concat(per.map((w, i) => ({ label: w.namespace + '/' + w.name, values: w.vramBytes,
          color: COLORS[i % COLORS.length] }))), bytes);
    el.append(h('h2', {}, 'Workloads on this GPU'), table([
      { title: 'Workload', get: (w) => wlLink(w.namespace, w.name) },
      { title: 'Isolation', get: (w) => w.isolation || '–' },
      { title: 'TFLOPS request / limit', num: true, get: (w) => num(w.tflopsRequest) + ' / ' + num(w.tflopsLimit) },
      { title: 'VRAM request / limit', num: true, get: (w) => bytes(w.vramRequestBytes) + ' / ' + bytes(w.vramLimitBytes) },
    ], o.workloads, 'No workload holds this GPU now.'));
  }

  function resources(r) {
    if (!r) return '–';
    const part = (x) => (x ? [x.tflops ? x.tflops + ' TFLOPS' : null, x.vram || null].filter(Boolean).join(', ') : '–');
    return 'requests ' + part(r.requests) + '; limits ' + part(r.limits);
  }

  async function workloadView(el, ns, name) {
    const o = await api('/workloads/' + encodeURIComponent(ns) + '/' + encodeURIComponent(name));
    setWhere(o.mode);
    const w = o.workload;
    const s = o.series;
    const gpus = w.gpus || [];
    el.append(h('p', { class: 'crumbs' }, link('#/', 'Overview'), ' › workload'),
      h('h1', {}, ns + '/' + name, w.active ? null : h('span', { class: 'tag' }, 'ended')),
      warnings(o.warnings),
      h('div', { class: 'cards' },
        card('Compute per GPU', w.active ? num(w.tflopsRequest) + ' / ' + num(w.tflopsLimit) + ' TFLOPS' : '–',
          'request / limit' + (w.computePercentLimit ? ' (limit ' + num(w.computePercentLimit) + ' % of the GPU)' : ''),
          'QoS ' + (w.qos || '–') + ', isolation ' + (w.isolation || '–')),
        card('VRAM per GPU', w.active ? bytes(w.vramRequestBytes) + ' / ' + bytes(w.vramLimitBytes) : '–', 'request / limit'),
        card('GPUs', String(gpus.length), gpus.map((u, i) => [i ? ', ' : '', gpuLink(u)])),
        card('Recommendation', w.recommendation ? 'available' : 'none',
          w.recommendation ? resources(w.recommendation) : (w.recommendationReason ||
            'the autoscaler writes one for workloads with tensor-fusion.ai/autoscale'))));
    chart(el, 'Compute per GPU (TFLOPS): request, limit and use', s.t, [
      { label: 'request', values: s.tflopsRequest, dash: [6, 4], color: '#1a7f37' },
      { label: 'limit', values: s.tflopsLimit, dash: [2, 3], color: '#d1242f' },
      { label: 'used (avg)', values: s.tflopsUsed, width: 3, color: '#1f6feb' },
      { label: 'used (peak)', values: s.tflopsPeak, color: '#8250df' },
    ], (v) => num(v) + ' TFLOPS', (v) => num(v));
    chart(el, 'VRAM per GPU: request, limit and use', s.t, [
      { label: 'request', values: s.vramRequestBytes, dash: [6, 4], color: '#1a7f37' },
      { label: 'limit', values: s.vramLimitBytes, dash: [2, 3], color: '#d1242f' },
      { label: 'used (peak)', values: s.vramUsedBytes, width: 3, color: '#1f6feb' },
    ], bytes);
    chart(el, 'Throttled kernel launches (waited for compute tokens)', s.t, [
      { label: 'launches', values: s.throttled, color: '#9a6700' },
    ], (v) => num(v, 0));
  }

  async function alertsView(el) {
    const o = await api('/alerts');
    el.append(h('h1', {}, 'Alerts'),
      h('p', { class: 'muted' }, o.source === 'alertmanager'
        ? 'Firing now, as Alertmanager holds them (the rules: dynamicConfig.alertRules).'
        : o.source === 'local' ? 'Local mode: workloads over their VRAM limit now. The seed 002 alert rules run in a cluster (tf-controller --enable-alert).'
          : 'Alerts are not enabled here.'),
      warnings(o.warnings),
      table([
        { title: 'Alert', get: (a) => (a.labels || {}).alertname || '–' },
        { title: 'Severity', get: (a) => (a.labels || {}).severity || '–' },
        { title: 'Where', get: (a) => Object.entries(a.labels || {})
          .filter(([k]) => !['alertname', 'severity', 'job'].includes(k))
          .map(([k, v]) => k + '=' + v).join(' ') },
        { title: 'Summary', get: (a) => a.summary || (a.annotations || {}).summary || '' },
        { title: 'Since', get: (a) => (a.startsAt ? when(Date.parse(a.startsAt)) : '–') },
      ], o.alerts || [], 'Nothing is firing.'));
  }

  function eventsTable(events) {
    return table([
      { title: 'Time', get: (e) => when(e.time) },
      { title: 'What', get: (e) => h('span', { class: 'tag ' + (e.type === 'Warning' ? 'bad' : 'ok') }, e.reason) },
      { title: 'Object', get: (e) => (e.kind === 'Workload' && e.object && e.reason !== 'AllocationRefused'
        ? wlLink(e.namespace || 'default', e.object) : [e.kind, ' ', e.namespace ? e.namespace + '/' : '', e.object]) },
      { title: 'Pool / node', get: (e) => [e.pool, e.node].filter(Boolean).join(' / ') },
      { title: 'Message', get: (e) => h('span', { class: 'msg' }, e.message) },
    ], events.map((e) => Object.assign({ _class: e.type === 'Warning' ? 'warning' : null }, e)),
    'No actions in this range.');
  }

  async function actionsView(el) {
    const o = await api('/events');
    const groups = [
      ['All', () => true],
      ['Refused allocations', (e) => /Refused|AllocationFailed/.test(e.reason)],
      ['Compaction', (e) => /Compaction/.test(e.reason)],
      ['Defragmentation', (e) => /Defrag/.test(e.reason)],
      ['Autoscaling', (e) => /Scal/.test(e.reason)],
    ];
    const body = h('div');
    const show = (i) => {
      body.replaceChildren(eventsTable(o.events.filter(groups[i][1])));
      bar.querySelectorAll('button').forEach((b, k) => b.classList.toggle('on', k === i));
    };
    const bar = h('div', { class: 'chips' }, groups.map((g, i) => h('button', { onclick: () => show(i) },
      g[0] + ' (' + o.events.filter(g[1]).length + ')')));
    el.append(h('h1', {}, 'Efficiency actions'),
      h('p', { class: 'muted' }, 'Node compaction and defragmentation runs, evictions, autoscaling, ' +
        'and refused allocations with their reasons, over the last ' + rangeText() + ' (' + o.source + ').'),
      warnings(o.warnings), bar, body);
    show(0);
  }

  // ---- shell -------------------------------------------------------------------------------

  function rangeText() {
    return { '15m': '15 minutes', '1h': 'hour', '1d': 'day', '7d': '7 days' }[range] || range;
  }
  function setWhere(mode) {
    document.getElementById('where').textContent = mode === 'cluster' ? 'cluster' : mode === 'local' ? 'this machine' : '';
  }
  function showLogin(why) {
    document.getElementById('login').hidden = false;
    main.hidden = true;
    document.getElementById('signout').hidden = true;
    document.getElementById('login-why').textContent = why;
    document.getElementById('token').focus();
  }

  async function render() {
    const gen = ++generation;
    clearTimeout(timer);
    window.tfCharts.forEach((u) => u.destroy());
    window.tfCharts = [];
    document.querySelectorAll('.ranges button').forEach((b) => b.classList.toggle('on', b.dataset.range === range));
    const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
    document.querySelectorAll('nav a').forEach((a) => a.classList.toggle('on',
      a.dataset.nav === (parts[0] || 'overview')));
    const el = h('div', { class: 'view' });
    try {
      if (parts[0] === 'gpu' && parts[1]) await gpuView(el, parts[1]);
      else if (parts[0] === 'workload' && parts[2]) await workloadView(el, parts[1], parts[2]);
      else if (parts[0] === 'alerts') await alertsView(el);
      else if (parts[0] === 'actions') await actionsView(el);
      else await overview(el);
    } catch (e) {
      if (gen !== generation) return;
      if (e instanceof Unauthorized) { showLogin(e.message); return; }
      el.append(h('div', { class: 'error' }, 'Could not load this view: ' + e.message));
    }
    if (gen !== generation) return;
    document.getElementById('login').hidden = true;
    document.getElementById('signout').hidden = false;
    main.hidden = false;
    main.replaceChildren(el);
    window.tfCharts.forEach((u) => u.setSize({ width: Math.max(320, Math.min(main.clientWidth - 32, 1100)), height: 220 }));
    document.body.dataset.ready = String(gen);
    timer = setTimeout(render, range === '15m' || range === '1h' ? 10000 : 60000);
  }

  function start() {
    // A link from `tfctl console` carries the token in the fragment (never sent to a
    // server): keep it for this tab and take it out of the address bar and history.
    const m = location.hash.match(/(?:^#|[&?])token=([^&]+)/);
    if (m) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
      history.replaceState(null, '', location.pathname + '#/');
    }
    document.getElementById('login-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, document.getElementById('token').value.trim());
      document.getElementById('token').value = '';
      render();
    });
    document.getElementById('signout').addEventListener('click', () => {
      sessionStorage.removeItem(TOKEN_KEY);
      showLogin('Signed out.');
    });
    document.querySelectorAll('.ranges button').forEach((b) => b.addEventListener('click', () => {
      range = b.dataset.range;
      sessionStorage.setItem(RANGE_KEY, range);
      render();
    }));
    window.addEventListener('hashchange', render);
    render();
  }
  start();
}());
