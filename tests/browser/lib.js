// Shared by the browser tests: Debian's Chromium driven by playwright-core (which downloads no browser), the
// recipebench binary, and small checks. Each test is `node TEST.js RECIPEBENCH CHROMIUM SOURCE_DIR OUT_DIR`.
'use strict';
const { chromium } = require('playwright-core');
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const [bin, chromiumPath, sourceDir, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: node TEST.js RECIPEBENCH CHROMIUM SOURCE_DIR OUT_DIR');
  process.exit(2);
}

function check(ok, message) {
  if (!ok) throw new Error('check failed: ' + message);
}

function freshDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** Runs `recipebench ARGS...`; returns its stdout. Throws with its stderr on a non-zero exit. */
function recipebench(...args) {
  return execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * A fresh folder under `dir` holding copies of the committed run records of reports/runs (`git ls-files`): a test's
 * board must not change with the runs a user's own `scripts/main` or `run` wrote there (git-ignored; one such run,
 * a group without a $ column, failed browser.sort_filter). Without git (not a checkout): every record there.
 */
function committedRuns(dir) {
  const runs = path.join(sourceDir, 'reports/runs');
  let names;
  try {
    names = execFileSync('git', ['-C', sourceDir, 'ls-files', 'reports/runs'], { encoding: 'utf8' })
      .split('\n').filter((f) => f.endsWith('.json')).map((f) => path.basename(f));
  } catch (e) {
    names = fs.readdirSync(runs).filter((f) => f.endsWith('.json'));
  }
  const out = freshDir(path.join(dir, 'committed-runs'));
  for (const f of names) fs.copyFileSync(path.join(runs, f), path.join(out, f));
  return out;
}

/** `recipebench report INPUTS --out DIR`; returns the parsed leaderboard.json. */
function report(inputs, dir) {
  freshDir(dir);
  recipebench('report', ...inputs, '--out', dir);
  return JSON.parse(fs.readFileSync(path.join(dir, 'leaderboard.json'), 'utf8'));
}

/** A browser and a page that may read file:// URLs only: any other request fails the test. */
async function openBrowser(options = {}) {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
           '--disable-sync', '--no-first-run'],
  });
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, ...options });
  const fetched = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file://')) return route.continue();
    fetched.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('dialog', (d) => { errors.push('dialog: ' + d.message()); d.dismiss(); });
  return { browser, context, page, fetched, errors };
}

/** Fails unless the page made no network request and raised no script error or dialog. */
function checkClean(session) {
  check(session.fetched.length === 0, 'the page fetched nothing, but it asked for ' + session.fetched.join(', '));
  check(session.errors.length === 0, 'no script error or dialog, but: ' + session.errors.join('; '));
}

function fileUrl(p) { return 'file://' + path.resolve(p); }

/** Runs `body`, prints its summary line on success, exits 1 on failure. */
function main(name, body) {
  body().then((summary) => { console.log(name + ': ' + summary); },
              (e) => { console.error(name + ': ' + (e && e.stack || e)); process.exit(1); });
}

module.exports = { bin, chromiumPath, sourceDir, outDir, check, freshDir, committedRuns, recipebench, report, openBrowser,
                   checkClean, fileUrl, main };
