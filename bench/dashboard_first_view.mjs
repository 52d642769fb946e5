// The dashboard's first view over a big store, in a real browser: ingests N generated agg records
// (bench_store_ingest), serves them with `ixbench dashboard`, loads the page in Debian's chromium
// (playwright-core) and times navigation -> every chart drawn (the page's own performance clock),
// with the /api/facets and /api/view requests' durations; then writes the static report of the
// whole store and times loading that. Median of --loads page loads.
//
//   node bench/dashboard_first_view.mjs BUILD_DIR [--records 100000] [--loads 5]
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const build = process.argv[2];
const flag = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const records = flag('--records', 100000);
const loads = flag('--loads', 5);
if (!build) {
  console.error('usage: node bench/dashboard_first_view.mjs BUILD_DIR [--records N] [--loads K]');
  process.exit(2);
}
const ixbench = path.join(build, 'src/cli/ixbench');
const ingestBench = path.join(build, 'bench/bench_store_ingest');
const playwright = createRequire(import.meta.url)('playwright-core');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ixbench-first-view-'));
const db = path.join(work, 'results.db');
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

console.log(execFileSync(ingestBench, ['--records', String(records), '--db', db], { encoding: 'utf8' }).trim());

const server = spawn(ixbench, ['dashboard', '--db', db, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((resolve) => {
  let out = '';
  server.stdout.on('data', (chunk) => {
    out += chunk;
    const match = /listening on (\S+)\n/.exec(out);
    if (match) resolve(match[1]);
  });
});
const browser = await playwright.chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });

async function firstView(target) {
  const page = await browser.newPage({ viewport: { width: 1500, height: 1300 } });
  await page.goto(target);
  await page.waitForFunction(() => window.ixDashboard && window.ixDashboard.renderedAt !== null, null, { timeout: 120000 });
  const timing = await page.evaluate(() => {
    const requests = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/'));
    const points = window.ixDashboard.state.view.points.length;
    return { rendered: window.ixDashboard.renderedAt, points, curves: window.ixDashboard.state.view.curves.length,
      api: Object.fromEntries(requests.map((e) => [new URL(e.name).pathname, e.duration])) };
  });
  await page.close();
  return timing;
}

const served = [];
for (let i = 0; i < loads; i++) served.push(await firstView(url + '/'));
const last = served[served.length - 1];
console.log(`served first view: ${median(served.map((t) => t.rendered)).toFixed(0)} ms to every chart drawn ` +
  `(median of ${loads}; /api/facets ${median(served.map((t) => t.api['/api/facets'])).toFixed(0)} ms, ` +
  `/api/view ${median(served.map((t) => t.api['/api/view'])).toFixed(0)} ms; ${last.points} points in ` +
  `${last.curves} curves of the panel)`);

const start = process.hrtime.bigint();
execFileSync(ixbench, ['report', '--db', db, '--out', path.join(work, 'site')]);
const reportS = Number(process.hrtime.bigint() - start) / 1e9;
const size = fs.statSync(path.join(work, 'site/index.html')).size;
const staticLoads = [];
for (let i = 0; i < Math.min(loads, 3); i++) staticLoads.push(await firstView('file://' + path.join(work, 'site/index.html')));
console.log(`static report of the whole store: written in ${reportS.toFixed(2)} s, ${(size / 1e6).toFixed(1)} MB; ` +
  `first view ${median(staticLoads.map((t) => t.rendered)).toFixed(0)} ms (${staticLoads[0].points} points inlined)`);

await browser.close();
server.kill('SIGTERM');
fs.rmSync(work, { recursive: true, force: true });
