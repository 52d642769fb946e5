// Browser tests of the dashboard: Debian's chromium, driven by playwright-core, against the real
// `ixbench dashboard` (and the static `ixbench report`) over a store ingested from known folders
// (fixture.mjs). Checks: the charts render with the right number of points and frontier points,
// the filters change them (hardware, kind, panel, dates), a model name made of markup is shown as
// text and runs nothing, hover details list the artifacts, the artifact link serves the file, CSV
// export holds every row. Writes screenshots to $IXBENCH_SCREENSHOT_DIR (default: the temp dir).
//
//   node tests/browser/dashboard.test.mjs IXBENCH_BINARY
// Exit: 0 passed, 1 failed, 77 skipped (no chromium or no playwright-core; the message says which).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { writeFixture, EXPECT, EVIL_MODEL } from './fixture.mjs';

const SKIP = 77;
const binary = process.argv[2];
const chromium = process.env.IXBENCH_CHROMIUM || '/usr/bin/chromium';
if (!binary || !fs.existsSync(binary)) {
  console.error(`usage: node dashboard.test.mjs IXBENCH_BINARY (got '${binary}')`);
  process.exit(1);
}
if (!fs.existsSync(chromium)) {
  console.log(`SKIP: no browser at ${chromium} (apt-get install chromium, or set IXBENCH_CHROMIUM)`);
  process.exit(SKIP);
}
let playwright;
try {
  playwright = createRequire(import.meta.url)('playwright-core');
} catch {
  console.log('SKIP: playwright-core is not installed (npm ci in the repository root)');
  process.exit(SKIP);
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ixbench-dashboard-'));
const shots = process.env.IXBENCH_SCREENSHOT_DIR || work;
fs.mkdirSync(shots, { recursive: true });
const db = path.join(work, 'results.db');
let failures = 0;
function check(condition, what, detail) {
  if (condition) {
    console.log(`ok   ${what}`);
  } else {
    failures++;
    console.log(`FAIL ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`);
  }
}

function ingest() {
  const folders = writeFixture(path.join(work, 'data'));
  execFileSync(binary, ['ingest', ...folders.measured, '--db', db], { stdio: 'pipe' });
  execFileSync(binary, ['ingest', ...folders.predicted, '--kind', 'predicted', '--db', db], { stdio: 'pipe' });
}

function startDashboard() {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['dashboard', '--db', db, '--port', '0', '--gpu-hour-cost', 'h200=4'],
      { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)\n/.exec(out);
      if (match) resolve({ child, url: match[1] });
    });
    child.on('exit', (code) => reject(new Error(`ixbench dashboard exited with ${code}: ${out}`)));
  });
}

// Points drawn in one chart (its 'points' datasets), and frontier points.
async function counts(page, chart) {
  return page.evaluate((id) => {
    const c = Chart.getChart('chart-' + id);
    const sum = (role) => c.data.datasets.filter((d) => d.ixRole === role).reduce((n, d) => n + d.data.length, 0);
    return { points: sum('points'), frontier: sum('frontier'), curves: c.data.datasets.filter((d) => d.ixRole === 'points').map((d) => d.label) };
  }, chart);
}

async function setCheck(page, fieldset, value, checked) {
  await page.locator(`#${fieldset} input[value="${value}"]`).setChecked(checked);
}

async function serverChecks(browser, url) {
  const page = await browser.newPage({ viewport: { width: 1500, height: 1300 } });
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(url + '/');
  await page.waitForFunction(() => window.Chart && Chart.getChart('chart-intvty'));
  const first = await counts(page, 'intvty');
  check(first.points === EXPECT.defaultPanelPoints, 'served: the first view draws every point of its panel', first);
  check((await counts(page, 'e2el')).points === EXPECT.defaultPanelPoints, 'served: the E2EL chart too');
  check((await counts(page, 'energy')).points === EXPECT.energyPoints, 'served: energy only where power was measured');
  check((await counts(page, 'cost')).points === EXPECT.defaultPanelPoints, 'served: cost for every hardware priced');
  await page.screenshot({ path: path.join(shots, 'dashboard-served.png'), fullPage: true });

  await setCheck(page, 'f-hw', 'b200', false);
  const noB200 = await counts(page, 'intvty');
  check(noB200.points === EXPECT.withoutB200, 'served: unchecking b200 removes its points', noB200);
  await setCheck(page, 'f-kind', 'predicted', false);
  const measured = await counts(page, 'intvty');
  check(measured.frontier === EXPECT.h200Frontier && measured.points === EXPECT.h200Frontier,
    'served: h200 measured alone, its frontier', measured);
  await setCheck(page, 'f-hw', 'b200', true);
  check((await counts(page, 'intvty')).points === EXPECT.measuredOnly, 'served: measured only');
  await setCheck(page, 'f-kind', 'predicted', true);

  const rows = await page.locator('#results tbody tr').count();
  check(rows === EXPECT.defaultPanelPoints, 'served: the table has a row per point', rows);
  const csv = await page.evaluate(() => window.ixDashboard.toCsv());
  check(csv.trim().split('\r\n').length === EXPECT.defaultPanelPoints + 1, 'served: the CSV holds every row plus a header');

  // Hover the first point of the first dataset: its details list its artifact, which the server serves.
  const spot = await page.evaluate(() => {
    const c = Chart.getChart('chart-intvty');
    const element = c.getDatasetMeta(0).data[0];
    const box = c.canvas.getBoundingClientRect();
    return { x: box.left + element.x, y: box.top + element.y };
  });
  await page.mouse.move(spot.x, spot.y);
  await page.waitForSelector('#details a');
  const href = await page.locator('#details a').first().getAttribute('href');
  const artifact = await page.evaluate(async (link) => (await fetch(link)).status, href);
  check(href.startsWith('/artifact?path=') && artifact === 200, 'served: hover details link an artifact the server serves', { href, artifact });
  const outside = await page.evaluate(async () => (await fetch('/artifact?path=' + encodeURIComponent('/etc/passwd'))).status);
  check(outside === 404, 'served: a path no result lists is not served', outside);

  await page.fill('#f-from', '2026-11-10');
  await page.dispatchEvent('#f-from', 'change');
  await page.waitForFunction((n) => {
    const c = Chart.getChart('chart-intvty');
    return c.data.datasets.filter((d) => d.ixRole === 'points').reduce((s, d) => s + d.data.length, 0) === n;
  }, EXPECT.fromNov10, { timeout: 5000 }).catch(() => {});
  check((await counts(page, 'intvty')).points === EXPECT.fromNov10, 'served: a date filter re-queries the store');
  await page.fill('#f-from', '');
  await page.dispatchEvent('#f-from', 'change');

  await page.selectOption('#f-seq', '8192/1024');
  await page.waitForFunction((n) => Chart.getChart('chart-intvty').data.datasets.filter((d) => d.ixRole === 'points')
    .reduce((s, d) => s + d.data.length, 0) === n, EXPECT.longSeqPanelPoints, { timeout: 5000 }).catch(() => {});
  check((await counts(page, 'intvty')).points === EXPECT.longSeqPanelPoints, 'served: another ISL/OSL panel');

  await page.selectOption('#f-model', EVIL_MODEL);
  await page.waitForFunction((n) => Chart.getChart('chart-intvty').data.datasets.filter((d) => d.ixRole === 'points')
    .reduce((s, d) => s + d.data.length, 0) === n, EXPECT.evilPanelPoints, { timeout: 5000 }).catch(() => {});
  check((await counts(page, 'intvty')).points === EXPECT.evilPanelPoints, 'served: the markup-named model has its points');
  const shown = await page.locator('#f-model option:checked').textContent();
  check(shown === EVIL_MODEL, 'served: the markup-named model is shown as text', shown);
  const evilRow = await page.locator('#results tbody tr').first().locator('td').nth(1).textContent();
  check(evilRow === 'deepseek-ai/DeepSeek-R1-0528' || evilRow === EVIL_MODEL, 'served: table cells are text', evilRow);
  const injected = await page.evaluate(() => ({ pwned: window.__pwned, imgs: document.querySelectorAll('img').length,
    scripts: document.querySelectorAll('script').length }));
  check(injected.pwned === undefined && injected.imgs === 0 && injected.scripts === 3, 'served: nothing from the store ran or became markup', injected);
  await page.screenshot({ path: path.join(shots, 'dashboard-served-markup-model.png'), fullPage: true });
  check(errors.length === 0, 'served: no page errors', errors);
  await page.close();
}

async function staticChecks(browser) {
  const out = path.join(work, 'report');
  execFileSync(binary, ['report', '--db', db, '--out', out, '--title', 'Report <b>of</b> & tests'], { stdio: 'pipe' });
  const html = fs.readFileSync(path.join(out, 'index.html'), 'utf8');
  check(!html.includes('<script>window.__pwned') && !html.includes('<img src=x'), 'static: store text is escaped in the file');
  check(!/(src|href)=["']?https?:/.test(html), 'static: no external scripts or styles (no CDN)');
  const page = await browser.newPage({ viewport: { width: 1500, height: 1300 } });
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('request', (request) => { if (!request.url().startsWith('file:') && !request.url().startsWith('blob:')) errors.push('request ' + request.url()); });
  await page.goto('file://' + path.join(out, 'index.html'));
  await page.waitForFunction(() => window.Chart && Chart.getChart('chart-intvty'));
  check((await counts(page, 'intvty')).points === EXPECT.defaultPanelPoints, 'static: the first view draws every point of its panel');
  check(await page.title() === 'Report <b>of</b> & tests', 'static: the title is text', await page.title());
  await setCheck(page, 'f-hw', 'b200', false);
  check((await counts(page, 'intvty')).points === EXPECT.withoutB200, 'static: a filter changes the points');
  await setCheck(page, 'f-hw', 'b200', true);
  await page.selectOption('#f-model', EVIL_MODEL);
  check((await counts(page, 'intvty')).points === EXPECT.evilPanelPoints, 'static: the markup-named model panel');
  const injected = await page.evaluate(() => ({ pwned: window.__pwned, imgs: document.querySelectorAll('img').length }));
  check(injected.pwned === undefined && injected.imgs === 0, 'static: nothing from the store ran', injected);
  await page.selectOption('#f-model', 'dsr1');
  await page.screenshot({ path: path.join(shots, 'dashboard-static.png'), fullPage: true });
  check(errors.length === 0, 'static: no page errors and no network requests', errors);
  await page.close();
}

async function main() {
  ingest();
  const dashboard = await startDashboard();
  const browser = await playwright.chromium.launch({ executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    await serverChecks(browser, dashboard.url);
    await staticChecks(browser);
  } finally {
    await browser.close();
    dashboard.child.kill('SIGTERM');
  }
  console.log(`screenshots in ${shots}`);
  if (failures) {
    console.log(`${failures} check(s) failed`);
    process.exit(1);
  }
  if (shots !== work) fs.rmSync(work, { recursive: true, force: true });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
