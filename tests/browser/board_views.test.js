// The views across entries (issue 46) in Chromium, each checked against leaderboard.json by a computation of this
// test's own: the Pareto view's front (hours to train the budget given with --token-budget, $ per 1M tokens), the
// best layout at each GPU count, the history of a recipe with N runs (N points in its chart and table; a measured
// recipe and the prediction of its layout told apart), and a run
// entry's YAML (equal to the recipe it was made from; said changed for a run whose recipe file changed since).
// Inputs: the seed's three B200 recipes, the prediction of the case predicted-vs-measured-not-linked, 30 generated
// recipes (tests/browser/generate_board.js) and three imports of
// the Mixtral log of the case leaderboard-vs-seed-page at three stack commits (two repeats and one other window).
// Screenshots: pareto.png, gpu-counts.png, history.png, history-predicted.png (the committed ones:
// reports/screenshots/).
'use strict';
const fs = require('fs');
const path = require('path');
const { sourceDir, outDir, check, freshDir, recipebench, openBrowser, checkClean, fileUrl, main } = require('./lib');
const { generate } = require('./generate_board');

const SEED = path.join(sourceDir, 'recipes/qwen3.5-397b-a17b/b200');
const CASE = path.join(sourceDir, 'tests/data/cases/leaderboard-vs-seed-page');
const BUDGET = 5e8;  // tokens: not the default, so the option is what the page shows
const COMMITS = ['aaaa111', 'bbbb222', 'cccc333'];

/** Three imports of the Mixtral log, its recipe's stack at each of COMMITS in turn (the file left at the last). */
function importThree(dir) {
  fs.cpSync(path.join(CASE, 'cfg'), path.join(dir, 'cfg'), { recursive: true });
  const base = fs.readFileSync(path.join(CASE, 'mixtral-8x7b-h100-tp2-ep8-dp8.yaml'), 'utf8');
  const recipe = path.join(dir, 'mixtral-history.yaml');
  COMMITS.forEach((c, i) => {
    fs.writeFileSync(recipe, base.replace(/^stack:\n/m, `stack:\n  megatron_lm: commit ${c} (core_r0.12.0)\n`));
    // One folder each: two imports within a second never collide, and their ids (0-, 1-, 2-...) order them as made
    // when their started_at are the same second.
    // One folder each: two imports within one second never collide, and the history orders runs started within
    // the same second by their records' paths (runs/0, runs/1, runs/2: as made).
    const runs = path.join(dir, 'runs', String(i));
    recipebench('import', path.join(CASE, 'megatron-mixtral.log'), '--recipe', recipe, '--out', runs, '--steps', '30',
                '--window', i === 2 ? '7:29' : '5:29');
  });
  return recipe;
}

/** The Pareto front of `points` ({hours, usd}), by its definition: no other point at most as large in both and
 *  smaller in one. */
function frontOf(points) {
  return points.filter((p) => !points.some((q) => q !== p && q.hours <= p.hours && q.usd <= p.usd &&
                                                   (q.hours < p.hours || q.usd < p.usd)));
}

async function checkPareto(page, board, shots) {
  let fronts = 0;
  for (const g of board.groups) {
    const priced = g.entries.filter((e) => e.usd_per_million_tokens !== null);
    if (priced.length < 2) continue;
    const points = priced.map((e) => ({ id: e.id, hours: BUDGET / (e.tokens_per_s_per_gpu * e.gpus) / 3600,
                                        usd: e.usd_per_million_tokens }));
    const want = frontOf(points).map((p) => p.id).sort();
    const chart = page.locator(`svg#pareto-${g.id}`);
    const got = (await chart.locator('a[data-front="1"]').evaluateAll((as) => as.map((a) => a.getAttribute('href').slice(1)))).sort();
    check(JSON.stringify(got) === JSON.stringify(want), `${g.id}: the page's front ${got} is the JSON's ${want}`);
    const links = await chart.locator('a[data-front]').count();
    check(links === priced.length, `${g.id}: every priced entry a point (${links} of ${priced.length})`);
    const title = await chart.locator('title').first().textContent();
    check(title.includes('500M tokens'), 'the budget named: ' + title);
    fronts += want.length;
  }
  const seed = board.groups[0];
  await page.locator(`section#${seed.id} div.view.pareto`).screenshot({ path: path.join(shots, 'pareto.png') });
  // A point links to its entry's card.
  const first = page.locator(`svg#pareto-${seed.id} a[data-front="1"]`).first();
  const id = (await first.getAttribute('href')).slice(1);
  await first.click();
  check(await page.evaluate(() => location.hash) === '#' + id, 'the point links to its card');
  return fronts;
}

async function checkGpuCounts(page, board, shots) {
  const seed = board.groups[0];
  const counts = [...new Set(seed.entries.map((e) => e.gpus))].sort((a, b) => a - b);
  check(counts.length >= 2, 'the seed group runs at several GPU counts: ' + counts);
  const rows = page.locator(`section#${seed.id} table.gpu-counts tbody tr`);
  check(await rows.count() === counts.length, `one row per GPU count (${counts})`);
  for (let i = 0; i < counts.length; i++) {
    const best = seed.entries.filter((e) => e.gpus === counts[i])
      .reduce((a, b) => (b.tokens_per_s_per_gpu > a.tokens_per_s_per_gpu ? b : a));
    const row = rows.nth(i);
    check(+await row.getAttribute('data-gpus') === counts[i] && await row.getAttribute('data-id') === best.id,
          `${counts[i]} GPUs: the best is ${best.id}, the page says ${await row.getAttribute('data-id')}`);
  }
  await page.locator(`section#${seed.id} div.view.gpu-counts`).screenshot({ path: path.join(shots, 'gpu-counts.png') });
  return counts.length;
}

async function checkHistory(page, board, shots) {
  const mixtral = board.groups.find((g) => g.model.startsWith('Mixtral'));
  check(mixtral && mixtral.entries.length === 2, 'Mixtral: the two repeats folded into one entry, the other window apart');
  for (const e of mixtral.entries) {
    const pts = e.history.points;
    check(pts.length === COMMITS.length, `${e.id}: ${COMMITS.length} points in its JSON history`);
    check(JSON.stringify(pts.map((p) => p.commit)) === JSON.stringify(COMMITS), 'oldest first: ' + pts.map((p) => p.commit));
    const card = page.locator(`article[id="${e.id}"]`);
    check(await card.locator('svg g.hpoint').count() === COMMITS.length, `${e.id}: ${COMMITS.length} points drawn`);
    const commits = await card.locator('table.history tbody tr td:nth-child(2)').allTextContents();
    check(JSON.stringify(commits) === JSON.stringify(COMMITS), `${e.id}: the table's commits ${commits}`);
    check(await card.locator('table.history tr.self').count() === 1, 'its own point marked once');
  }
  // The measured recipe the prediction is linked to (the seed's #1, not a generated copy of its layout:
  // predictions.h) and the prediction: one measured and one predicted point, told apart.
  const linked = board.predictions[0].measured_id;
  check(linked === 'attune-tp2-pp8-ep8-vpp2-mt16k', 'the prediction linked to the seed, not to generated data: ' + linked);
  const seedFirst = board.groups[0].entries.find((e) => e.id === linked);
  check(seedFirst && seedFirst.history.points.map((p) => p.kind).join() === 'measured,predicted',
        `${linked}: measured, then predicted`);
  const seedCard = page.locator(`article[id="${seedFirst.id}"]`);
  check(await seedCard.locator('svg g.hpoint[data-kind="predicted"]').count() === 1 &&
        await seedCard.locator('svg g.hpoint[data-kind="measured"]').count() === 1, 'drawn apart by kind');
  check(await seedCard.locator('table.history tr.predicted td:nth-child(2)').textContent() === '088a0e2',
        'the prediction\'s commit is the one its `by` names');
  const mt8k = board.groups[0].entries.find((e) => e.id === 'attune-tp2-pp8-ep8-vpp2-mt8k');
  check(mt8k.history === null, 'a recipe of one point has no history');
  const both = seedCard.locator('div.history');
  await both.scrollIntoViewIfNeeded();
  await page.waitForTimeout(100);
  await both.screenshot({ path: path.join(shots, 'history-predicted.png') });
  const shown = page.locator(`article[id="${mixtral.entries[0].id}"] div.history`);
  await shown.scrollIntoViewIfNeeded();
  await page.waitForTimeout(100);  // a card off screen is painted once scrolled to (content-visibility: auto)
  await shown.screenshot({ path: path.join(shots, 'history.png') });
  return mixtral;
}

async function checkRunYaml(page, mixtral, recipe) {
  const bytes = fs.readFileSync(recipe, 'utf8');
  const latest = mixtral.entries.find((e) => e.window === 'steps 7..29');  // imported with the file as it is now
  const card = page.locator(`article[id="${latest.id}"]`);
  check(await card.locator('h4', { hasText: 'Recipe it was made from' }).count() === 1, 'the run\'s recipe section');
  check(await card.locator('pre.yaml').textContent() === bytes, 'the run\'s YAML is its recipe\'s text');
  const folded = mixtral.entries.find((e) => e !== latest);  // imported at bbbb222: the file changed since
  const said = await page.locator(`article[id="${folded.id}"]`).textContent();
  check(said.includes('has changed since the run'), 'a changed recipe is not shown as the run\'s');
  return bytes.length;
}

main('board_views', async () => {
  const dir = freshDir(path.join(outDir, 'board_views'));
  const shots = freshDir(path.join(dir, 'screenshots'));
  const recipe = importThree(dir);
  generate(sourceDir, path.join(dir, 'generated'), 30);
  const seedFiles = ['attune-tp2-pp8-ep8-vpp2-mt16k.yaml', 'attune-tp2-pp8-ep8-vpp2-mt8k.yaml',
                     'attune-48gpu-tp2-pp6-ep8.yaml'].map((f) => path.join(SEED, f));
  seedFiles.push(path.join(sourceDir, 'tests/data/cases/predicted-vs-measured-not-linked',
                           'plan-tp2-pp8-vpp2-ep8-dp4-split6-mt16k-recompute.yaml'));  // predicts the seed #1's layout
  const out = path.join(dir, 'report');
  recipebench('report', ...seedFiles, path.join(dir, 'generated'), path.join(dir, 'runs'), '--out', out,
              '--token-budget', String(BUDGET));
  const board = JSON.parse(fs.readFileSync(path.join(out, 'leaderboard.json'), 'utf8'));
  check(board.token_budget === BUDGET, 'the JSON states the budget');
  const s = await openBrowser({ viewport: { width: 1366, height: 900 } });
  try {
    await s.page.goto(fileUrl(path.join(out, 'leaderboard.html')));
    const fronts = await checkPareto(s.page, board, shots);
    const counts = await checkGpuCounts(s.page, board, shots);
    const mixtral = await checkHistory(s.page, board, shots);
    const n = await checkRunYaml(s.page, mixtral, recipe);
    checkClean(s);
    return `Pareto fronts as computed (${fronts} points on them); best of ${counts} GPU counts; history of ` +
           `${COMMITS.length} points on ${mixtral.entries.length} entries; the run's YAML equal (${n} bytes); ` +
           `screenshots in ${shots}`;
  } finally {
    await s.browser.close();
  }
});
