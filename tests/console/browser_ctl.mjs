// SPDX-License-Identifier: Apache-2.0
// The web console of tf-controller (the cluster: every pool) end to end in headless Chromium:
// the real tf-controller against the test API server (tests/controller/fakeapi.py) and the
// GreptimeDB stand-in (fakegreptime.py) holding a few minutes of usage. Three GPUs on two
// nodes, one workload on two of them; an Event of a compaction run. The pages must sign in with
// the token of the Secret the controller made, list every GPU and node and the workload with its
// per-GPU request and limit, draw the GPU's and the workload's history from GreptimeDB, show the
// compaction on the actions page, say that alerts are off, and load nothing from elsewhere.
// Exit 77 (skipped) without Chromium or playwright-core (1 under `make test`; lib.mjs).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { chartsDrawn, harness, loadChromium, watchProblems } from './lib.mjs';

const env = (k) => {
  if (!process.env[k]) { console.error(`browser_ctl.mjs: ${k} is not set`); process.exit(2); }
  return process.env[k];
};
const src = env('TF_SRCDIR');
const { chromium, chromiumPath } = await loadChromium(src);
const ctlBin = env('TF_CONTROLLER_BIN');
const python = process.env.TF_PYTHON || 'python3';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tf-console-ctl-'));
const children = [];

function cleanup() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  fs.rmSync(tmp, { recursive: true, force: true });
}
const { check, fail, sleep, launch, pass } = harness(cleanup, path.join(tmp, 'controller.log'));

async function waitFile(f, what) {
  for (let i = 0; i < 300 && !fs.existsSync(f); i++) await sleep(100);
  check(fs.existsSync(f), what);
  return fs.readFileSync(f, 'utf8').trim();
}
function start(args, log) {
  const out = log ? fs.openSync(path.join(tmp, log), 'w') : 'ignore';
  const c = spawn(args[0], args.slice(1), { stdio: ['ignore', out, out] });
  children.push(c);
  return c;
}

// ---- the cluster: API server, GreptimeDB, objects, history ----------------------------------

start([python, path.join(src, 'tests/controller/fakeapi.py'), '--port', '0', '--port-file', path.join(tmp, 'api.port')]);
start([python, path.join(src, 'tests/controller/fakegreptime.py'), '--port', '0', '--port-file', path.join(tmp, 'gdb.port')]);
const api = 'http://127.0.0.1:' + await waitFile(path.join(tmp, 'api.port'), 'the API server is up');
const gdb = 'http://127.0.0.1:' + await waitFile(path.join(tmp, 'gdb.port'), 'GreptimeDB (stand-in) is up');

async function k8s(method, p, body, ctype = 'application/json') {
  const r = await fetch(api + p, { method, headers: { 'Content-Type': ctype }, body: body && JSON.stringify(body) });
  const text = await r.text();
  if (r.status >= 300) fail(`${method} ${p}: ${r.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}
for (const ns of ['tensor-fusion-sys', 'ml']) await k8s('POST', '/api/v1/namespaces', { metadata: { name: ns } });
const gpus = [['gpu-a0', 'node-a', '212', '64Gi'], ['gpu-a1', 'node-a', '212', '64Gi'], ['gpu-b0', 'node-b', '312', '80Gi']];
for (const [name, node, t, v] of gpus) {
  await k8s('POST', '/apis/tensor-fusion.ai/v1/gpus',
    { apiVersion: 'tensor-fusion.ai/v1', kind: 'GPU', metadata: { name, labels: { 'tensor-fusion.ai/gpupool': 'pool-a' } } });
  await k8s('PATCH', `/apis/tensor-fusion.ai/v1/gpus/${name}/status`, {
    status: {
      uuid: 'GPU-' + name, gpuModel: 'A100-80GB', index: 0, phase: 'Running', message: '',
      capacity: { tflops: '312', vram: '80Gi' }, available: { tflops: t, vram: v },
      nodeSelector: { 'kubernetes.io/hostname': node },
    },
  }, 'application/merge-patch+json');
}
for (const [i, g] of ['gpu-a0', 'gpu-a1'].entries()) {
  await k8s('POST', '/api/v1/namespaces/ml/pods', {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: 'train-' + i, labels: { 'tensor-fusion.ai/component': 'client' },
      annotations: {
        'tensor-fusion.ai/gpupool': 'pool-a', 'tensor-fusion.ai/workload': 'train', 'tensor-fusion.ai/gpu-ids': g,
        'tensor-fusion.ai/qos': 'high', 'tensor-fusion.ai/isolation': 'soft',
        'tensor-fusion.ai/tflops-request': '50', 'tensor-fusion.ai/tflops-limit': '100',
        'tensor-fusion.ai/vram-request': '8Gi', 'tensor-fusion.ai/vram-limit': '16Gi',
      },
    },
    spec: { nodeName: 'node-a', containers: [{ name: 'app', image: 'x' }] },
  });
}
await k8s('POST', '/api/v1/namespaces/default/events', {
  apiVersion: 'v1', kind: 'Event', metadata: { name: 'compaction.1', namespace: 'default' },
  involvedObject: { apiVersion: 'tensor-fusion.ai/v1', kind: 'GPUPool', name: 'pool-a' },
  type: 'Normal', reason: 'Compaction', message: 'node node-b released: empty',
  source: { component: 'tf-controller' }, lastTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), count: 1,
});
// What the hypervisors wrote over the last two minutes: the workload uses 20 of its 50
// requested TFLOPS on each GPU, 6 GiB of VRAM, and waited for compute tokens now and then.
const lines = [];
const now = Date.now();
for (let i = 0; i < 16; i++) {
  const ts = now - (16 - i) * 7500;
  for (const [k, g] of ['gpu-a0', 'gpu-a1'].entries()) {
    const tags = `node=node-a,pool=pool-a,uuid=GPU-${g}`;
    lines.push(`tf_worker_usage,${tags},worker=train-${k},namespace=ml,workload=train compute_percentage=6.41,` +
      `compute_tflops=20,memory_bytes=6442450944i,memory_percentage=7.5,compute_throttled_cnt=${i * 3}i ${ts}`);
    lines.push(`tf_gpu_usage,${tags} compute_percentage=6.41,compute_tflops=20,memory_bytes=6442450944i,memory_percentage=7.5 ${ts}`);
  }
}
const w = await fetch(gdb + '/v1/influxdb/api/v2/write?db=public&precision=ms', { method: 'POST', body: lines.join('\n') });
check(w.status === 204, 'the usage history is written to GreptimeDB');

// ---- tf-controller --------------------------------------------------------------------------

const kubeconfig = path.join(tmp, 'kubeconfig');
fs.writeFileSync(kubeconfig, `apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n  cluster: {server: '${api}'}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: fake\n  context: {cluster: fake, user: u, namespace: tensor-fusion-sys}\n`);
fs.writeFileSync(path.join(tmp, 'config.yaml'), 'defaultPool: pool-a\nautoMigration: {enable: false}\n');
start([ctlBin, '--kubeconfig', kubeconfig, '--namespace', 'tensor-fusion-sys', '--bind', '127.0.0.1',
  '--webhook-port', '0', '--http-port', '0', '--config', path.join(tmp, 'config.yaml'), '--identity', 'ctl-a',
  '--resync-ms', '500', '--lease-seconds', '3', '--metrics-url', gdb, '--metrics-interval-ms', '1000',
  '--port-file', path.join(tmp, 'ctl.ports')], 'controller.log');
const ports = (await waitFile(path.join(tmp, 'ctl.ports'), 'the controller is up')).split(/\s+/);
const base = 'http://127.0.0.1:' + ports[1];
// The first API request makes the token's Secret (and is refused: it carries none).
check((await fetch(base + '/api/v1/console/overview')).status === 401, 'the API refuses a request without the token');
const sec = await k8s('GET', '/api/v1/namespaces/tensor-fusion-sys/secrets/tensor-fusion-console-token');
const token = Buffer.from(sec.data.token, 'base64').toString();
check(/^[0-9a-f]{64}$/.test(token), 'the controller made the console token\'s Secret');

// ---- the pages ------------------------------------------------------------------------------

const browser = await launch(chromium, chromiumPath);
const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
const problems = watchProblems(page, base);
await page.goto(base + '/');
await page.waitForSelector('#login:not([hidden])');
check(page.url() === base + '/console/', 'the root redirects to the console, which asks for the token');
await page.fill('#token', token);
await page.click('#login-form button');
await page.waitForSelector('text=ml/train');
const text = await page.textContent('#main');
check(/GPUs\s*3\s*2 node\(s\), 1 pool\(s\)/.test(text) && /node-a/.test(text) && /node-b/.test(text),
  'the overview counts the cluster: 3 GPUs on 2 nodes in 1 pool');
check(['gpu-a0', 'gpu-a1', 'gpu-b0'].every((g) => text.includes('GPU-' + g)),
  'the overview lists every GPU');
const row = await page.textContent('tr:has(td:first-child > a:text-is("ml/train"))');
check(/50 \/ 100/.test(row) && /8 GiB \/ 16 GiB/.test(row) && /20 \/ 20/.test(row),
  'the workload shows its per-GPU request and limit and its use from GreptimeDB: ' + row);
check(/Compaction/.test(text), 'the overview\'s recent actions show the compaction');

await page.goto(base + '/console/#/gpu/GPU-gpu-a0');
await page.waitForFunction(() => window.tfCharts && window.tfCharts.length >= 2 && /GPU-gpu-a0/.test(document.querySelector('#main h1').textContent));
let charts = await chartsDrawn(page);
check(charts.length === 2 && charts.every((c) => c.pts > 0 && c.ink > 50), 'the GPU page draws its history: ' + JSON.stringify(charts));

await page.goto(base + '/console/#/workload/ml/train');
await page.waitForFunction(() => window.tfCharts && window.tfCharts.length === 3 && /ml\/train/.test(document.querySelector('#main h1').textContent));
charts = await chartsDrawn(page);
check(charts[0].pts > 0 && charts[0].ink > 50, 'the workload page draws its use: ' + JSON.stringify(charts[0]));
check(charts[2].pts > 0, 'the workload page draws its throttling: ' + JSON.stringify(charts[2]));

await page.click('nav a[data-nav="actions"]');
await page.waitForSelector('.chips');
await page.click('.chips button:has-text("Compaction")');
const cmp = await page.textContent('tr:has-text("Compaction")');
check(/pool-a/.test(cmp) && /node node-b released/.test(cmp), 'the actions page shows the compaction run: ' + cmp.trim());

await page.click('nav a[data-nav="alerts"]');
await page.waitForSelector('text=Alerts are not enabled here.');
check(true, 'the alerts page says alerts are off (tf-controller without --enable-alert)');
const served = await (await fetch(base + '/console/')).text();
check(!served.includes(token) && !(await page.content()).includes(token), 'neither the pages nor the page hold the token');
check(problems.length === 0, 'no page errors, blocked loads or requests elsewhere: ' + JSON.stringify(problems));

await pass('all cluster console browser checks passed');
