// SPDX-License-Identifier: Apache-2.0
// The web console end to end in headless Chromium (Debian's /usr/bin/chromium driven by npm's
// playwright-core from web/console/node_modules): a real tf-hypervisor on the simulated GPU,
// two real CUDA workloads (gpu_burn: the timer.cu spin kernel on the sim's libcuda) under the
// soft limiter with different limits, and one request refused for VRAM. The pages must sign in
// with the token, list the GPU and both workloads with their limits, draw charts with points,
// show the refused allocation with the allocator's reason, and load nothing the content
// security policy blocks. With TF_CONSOLE_SCREENSHOT=FILE the overview is saved there (the
// README's picture, docs/images/console.png; docs/console.md).
// Exit 77 (skipped) when Chromium or playwright-core is not installed (scripts/deps.sh test),
// 1 under `make test` (TF_REQUIRE_BROWSER=1), which installs them.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { chartsDrawn, chartsWhen, harness, loadChromium, watchProblems } from './lib.mjs';

const env = (k) => {
  if (!process.env[k]) { console.error(`browser.mjs: ${k} is not set`); process.exit(2); }
  return process.env[k];
};
const { chromium, chromiumPath } = await loadChromium(env('TF_SRCDIR'));

const hvBin = env('TF_HYPERVISOR_BIN');
const tfctl = env('TF_TFCTL_BIN');
const burn = env('TF_GPU_BURN');
const ptx = env('TF_TIMER_PTX');
const simDir = env('TF_SIM_LIBDIR');
const state = fs.mkdtempSync(path.join(os.tmpdir(), 'tf-console-'));
const childEnv = {
  ...process.env,
  TF_STATE_DIR: state,
  LD_LIBRARY_PATH: simDir,
  TF_NVML_LIBRARY: path.join(simDir, 'libnvidia-ml.so.1'),
  TF_SIM_DEVICES: 'A100-80GB',
  TF_SIM_SHM_PREFIX: path.join(state, 'sim-'),
};
const children = [];

function cleanup() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  try {
    const pid = parseInt(fs.readFileSync(path.join(state, 'hypervisor.lock'), 'utf8'), 10);
    if (pid > 0) process.kill(pid, 'SIGTERM');
  } catch { /* not running */ }
  fs.rmSync(state, { recursive: true, force: true });
}
const { check, sleep, launch, pass } = harness(cleanup, path.join(state, 'hypervisor.log'));

// ---- the machine: hypervisor, two workloads, one refusal ------------------------------------

const hvLog = fs.openSync(path.join(state, 'hypervisor.log'), 'w');
children.push(spawn(hvBin, ['--state-dir', state, '--metrics-interval', '500', '--log-level', 'warn'],
  { env: childEnv, stdio: ['ignore', hvLog, hvLog] }));
for (let i = 0; i < 200 && !fs.existsSync(path.join(state, 'hypervisor.addr')); i++) await sleep(100);
check(fs.existsSync(path.join(state, 'hypervisor.addr')), 'the hypervisor is up');
const base = 'http://' + fs.readFileSync(path.join(state, 'hypervisor.addr'), 'utf8').trim();
const token = fs.readFileSync(path.join(state, 'api-token'), 'utf8').trim();

function run(name, pct, vram, mib, seconds) {
  const log = fs.openSync(path.join(state, name + '.log'), 'w');
  const c = spawn(tfctl, ['run', '--compute-percent', String(pct), '--vram-limit', vram, '--name', name,
    '--', burn, ptx, String(seconds), String(mib), '1000', name], { env: childEnv, stdio: ['ignore', log, log] });
  children.push(c);
  return c;
}
run('burn-30', 30, '2Gi', 1024, 60);
run('burn-60', 60, '4Gi', 3072, 60);
const refused = spawnSync(tfctl, ['run', '--vram-limit', '200Gi', '--name', 'too-big', '--', 'true'],
  { env: childEnv, encoding: 'utf8' });
check(refused.status === 1 && /insufficient VRAM/.test(refused.stderr + refused.stdout),
  'a request for 200Gi is refused with the allocator\'s reason');

async function api(p) {
  const r = await fetch(base + '/api/v1/console' + p, { headers: { Authorization: 'Bearer ' + token } });
  return r.json();
}
// Wait until both workloads have a few metric rounds of history and the refusal is written.
for (let i = 0; i < 120; i++) {
  const o = await api('/overview?range=15m');
  const ev = await api('/events?range=15m');
  const ready = ['burn-30', 'burn-60'].every((n) => {
    const w = (o.workloads || []).find((x) => x.name === n);
    return w && w.usage && w.usage.samples >= 3;
  }) && (ev.events || []).some((e) => e.reason === 'AllocationRefused');
  if (ready) break;
  await sleep(500);
}

// ---- the pages -------------------------------------------------------------------------------

const browser = await launch(chromium, chromiumPath);
const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
const problems = watchProblems(page, base);

await page.goto(base + '/');
await page.waitForSelector('#login:not([hidden])');
check(page.url() === base + '/console/', 'the root redirects to the console, which asks for the token');
await page.fill('#token', 'not-the-token');
// Chromium logs each refused request as a failed load. The overview asks for two things at
// once, and a message may come after the page has shown the refusal: wait until no request is
// in flight and every 401 answer was logged (at most 5 s), then forget them.
let inFlight = 0, answered401 = 0, logged401 = 0;
page.on('request', () => inFlight++);
page.on('requestfinished', () => inFlight--);
page.on('requestfailed', () => inFlight--);
page.on('response', (r) => { if (r.status() === 401) answered401++; });
page.on('console', (m) => { if (/status of 401/.test(m.text())) logged401++; });
await page.click('#login-form button');
await page.waitForFunction(() => /not accepted/.test(document.getElementById('login-why').textContent));
check(true, 'a wrong token is refused');
for (let i = 0; i < 50 && (inFlight > 0 || answered401 === 0 || logged401 < answered401); i++) await sleep(100);
problems.length = 0;
await page.fill('#token', token);
await page.click('#login-form button');
await page.waitForSelector('body[data-ready]');
await page.click('button[data-range="15m"]');
await page.waitForFunction(() => document.querySelector('button[data-range="15m"]').classList.contains('on') &&
  document.querySelector('#main h1') && document.body.dataset.ready);
await page.waitForSelector('text=default/burn-60');
const text = await page.textContent('#main');
check(/A100-80GB/.test(text), 'the overview lists the GPU');
check(/default\/burn-30/.test(text) && /default\/burn-60/.test(text), 'the overview lists both workloads');
const row = async (name) => page.textContent(`tr:has(td:first-child > a:text-is("default/${name}"))`);
const r30 = await row('burn-30');
const r60 = await row('burn-60');
check(/\(30 %\)/.test(r30) && /2 GiB \/ 2 GiB/.test(r30), 'burn-30 shows its limits: 30 % of the GPU, 2 GiB: ' + r30);
check(/\(60 %\)/.test(r60) && /4 GiB \/ 4 GiB/.test(r60), 'burn-60 shows its limits: 60 % of the GPU, 4 GiB: ' + r60);
check(/AllocationRefused/.test(text), 'the overview\'s recent actions show the refusal');
if (process.env.TF_CONSOLE_SCREENSHOT) {
  await page.screenshot({ path: process.env.TF_CONSOLE_SCREENSHOT, fullPage: false });
  console.log('screenshot: ' + process.env.TF_CONSOLE_SCREENSHOT);
}

await page.click('a[href^="#/gpu/"]');
await page.waitForFunction(() => window.tfCharts.length >= 2 && /GPU/.test(document.querySelector('#main h1').textContent));
const gpuDrawn = (cs) => cs.length === 2 && cs.every((c) => c.pts > 0 && c.ink > 50);
let charts = await chartsWhen(page, gpuDrawn);
check(gpuDrawn(charts),
  'the GPU page draws utilisation and VRAM with points: ' + JSON.stringify(charts));
const gpuText = await page.textContent('#main');
check(/default\/burn-30/.test(gpuText) && /default\/burn-60/.test(gpuText), 'the GPU page lists its workloads');

await page.goto(base + '/console/#/workload/default/burn-60');
await page.waitForFunction(() => window.tfCharts.length === 3 && /burn-60/.test(document.querySelector('#main h1').textContent));
const wlDrawn = (cs) => cs.length === 3 && cs.every((c) => c.ink > 50) && cs[0].pts > 0 && cs[1].pts > 0;
charts = await chartsWhen(page, wlDrawn);
check(wlDrawn(charts),
  'the workload page draws request, limit and use: ' + JSON.stringify(charts));
const wlText = await page.textContent('#main');
check(/187\.2 \/ 187\.2 TFLOPS/.test(wlText) && /limit 60 % of the GPU/.test(wlText),
  'the workload page shows its request and limit');
check(/Recommendation/.test(wlText) && charts.some((c) => /Throttled kernel launches/.test(c.title)),
  'the workload page has the autoscaler\'s recommendation and the throttling chart');

// The longer ranges: each asks the API for its range and still draws the workload's points.
for (const range of ['1h', '1d', '7d']) {
  const asked = page.waitForRequest((r) => r.url().includes('/workloads/default/burn-60?range=' + range));
  await page.click(`button[data-range="${range}"]`);
  await asked;
  await page.waitForFunction((r) => document.querySelector(`button[data-range="${r}"]`).classList.contains('on') &&
    window.tfCharts.length === 3 && document.body.dataset.ready, range);
  charts = await chartsDrawn(page);
  check(charts[0].pts > 0 && charts[0].ink > 50, `the ${range} range draws the workload's use: ` + JSON.stringify(charts[0]));
}

await page.click('nav a[data-nav="actions"]');
await page.waitForSelector('.chips');
await page.click('.chips button:has-text("Refused allocations")');
const refusal = await page.textContent('tr:has-text("AllocationRefused")');
check(/too-big/.test(refusal) && /insufficient VRAM: need 200Gi/.test(refusal),
  'the actions page shows the refused allocation with its reason: ' + refusal.trim());

await page.click('nav a[data-nav="alerts"]');
await page.waitForSelector('text=Nothing is firing.');
check(true, 'the alerts page answers');

// No secret in what the server sends or the page shows: the token is only in the tab's
// session storage.
const served = await (await fetch(base + '/console/')).text() + await (await fetch(base + '/console/app.js')).text();
check(!served.includes(token) && !(await page.content()).includes(token) && !page.url().includes(token),
  'neither the pages nor the address hold the token');

await page.click('#signout');
await page.waitForSelector('#login:not([hidden])');
const stored = await page.evaluate(() => sessionStorage.getItem('tf-console-token'));
check(stored === null, 'signing out forgets the token');

// `tfctl console` prints a link that signs in; the page takes the token out of the address.
const link = spawnSync(tfctl, ['console'], { env: childEnv, encoding: 'utf8' });
check(link.status === 0 && link.stdout.trim().startsWith(base + '/console/#token='), 'tfctl console prints the link: ' +
  link.stdout.replace(/token=.*/, 'token=...').trim());
const tab = await browser.newPage(); // a new tab: its own, empty session storage
await tab.goto(link.stdout.trim());
await tab.waitForSelector('text=default/burn-60');
check(!tab.url().includes(token) && tab.url().endsWith('/console/#/'), 'the link signs in and leaves no token in the address');
check(problems.length === 0, 'no page errors, blocked loads or requests elsewhere: ' + JSON.stringify(problems));

await pass('all console browser checks passed');
