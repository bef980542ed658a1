// SPDX-License-Identifier: Apache-2.0
// Shared by the console's browser tests (browser.mjs: tf-hypervisor; browser_ctl.mjs:
// tf-controller): finding Chromium and playwright-core, watching a page for problems, and
// measuring what its charts drew.
import fs from 'node:fs';
import path from 'node:path';

// Debian's Chromium and the lockfile's playwright-core (web/console/node_modules). Exits 77
// (skipped) when either is missing, or 1 under `make test` (TF_REQUIRE_BROWSER=1), which
// installs both first (scripts/deps.sh test): there a missing browser is a failure.
export async function loadChromium(srcdir) {
  const chromiumPath = process.env.TF_CHROMIUM || '/usr/bin/chromium';
  const pwPath = path.join(srcdir, 'web/console/node_modules/playwright-core/index.mjs');
  if (!fs.existsSync(chromiumPath) || !fs.existsSync(pwPath)) {
    const req = process.env.TF_REQUIRE_BROWSER === '1';
    console.log(`${req ? 'FAIL' : 'SKIP'}: needs ${chromiumPath} and ${pwPath} (scripts/deps.sh test)`);
    process.exit(req ? 1 : 77);
  }
  const { chromium } = await import(pwPath);
  return { chromium, chromiumPath };
}

// Page errors, console errors, failed loads and requests to anywhere but BASE, as they come.
export function watchProblems(page, base) {
  const problems = [];
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console error: ' + m.text()); });
  page.on('requestfailed', (r) => problems.push('request failed: ' + r.url()));
  page.on('request', (r) => { if (!r.url().startsWith(base)) problems.push('outside request: ' + r.url()); });
  return problems;
}

// Per chart of the page: its title, its non-null data points and its coloured pixels (the
// grid and axes are grey; every series but a GPU's total has a saturated colour).
export async function chartsDrawn(page) {
  return page.evaluate(() => window.tfCharts.map((u) => {
    const pts = u.data.slice(1).reduce((n, s) => n + s.filter((v) => v !== null && v !== undefined).length, 0);
    const c = u.ctx.canvas;
    const img = u.ctx.getImageData(0, 0, c.width, c.height).data;
    let ink = 0;
    for (let i = 0; i < img.length; i += 4) {
      const r = img[i], g = img[i + 1], b = img[i + 2];
      if (img[i + 3] > 0 && Math.max(r, g, b) - Math.min(r, g, b) > 80) ink++;
    }
    return { title: u.root.parentNode.querySelector('h3').textContent, pts, ink };
  }));
}

// The charts once OK(charts) holds, or as they are after MS milliseconds: a page redraws with
// the newest samples every 10 s, and a chart of a few seconds' samples is short on ink.
export async function chartsWhen(page, ok, ms = 25000) {
  const end = Date.now() + ms;
  for (;;) {
    let charts = [];
    try { charts = await chartsDrawn(page); } catch { /* mid-redraw */ }
    if (ok(charts) || Date.now() > end) return charts;
    await new Promise((r) => setTimeout(r, 250));
  }
}

// The test's outcome: CHECK prints "ok - MSG" or fails; FAIL prints MSG and the tail of the
// server's LOG, closes the browser, runs CLEANUP and exits 1, as it does after 150 s in all.
export function harness(cleanup, log) {
  const t = { browser: null };
  t.fail = (msg) => {
    console.error('FAIL: ' + msg);
    try { console.error(fs.readFileSync(log, 'utf8').slice(-4000)); } catch { /* none */ }
    if (t.browser) t.browser.close().catch(() => {});
    cleanup();
    process.exit(1);
  };
  t.check = (cond, msg) => { if (!cond) t.fail(msg); else console.log('ok - ' + msg); };
  t.sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  // Headless Chromium (as root it needs --no-sandbox).
  t.launch = async (chromium, executablePath) => {
    t.browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    return t.browser;
  };
  t.pass = async (msg) => {
    await t.browser.close();
    t.browser = null;
    cleanup();
    console.log(msg);
    process.exit(0);
  };
  setTimeout(() => t.fail('timed out after 150 s'), 150000).unref();
  return t;
}
