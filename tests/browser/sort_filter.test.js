// Sorting by a click on "$ / 1M tokens", checked against leaderboard.json's figures, and the filters by status,
// GPU type and backend. The seed recipes are copied with #1 priced at $20/GPU-hour so that the cheapest entry is
// not the fastest, beside the committed run records.
'use strict';
const fs = require('fs');
const path = require('path');
const { sourceDir, outDir, check, freshDir, committedRuns, report, openBrowser, checkClean, fileUrl, main } = require('./lib');

function inputs(dir) {
  const seeds = freshDir(path.join(dir, 'recipes'));
  const b200 = path.join(sourceDir, 'recipes/qwen3.5-397b-a17b/b200');
  for (const f of fs.readdirSync(b200)) {
    let text = fs.readFileSync(path.join(b200, f), 'utf8');
    if (f === 'attune-tp2-pp8-ep8-vpp2-mt16k.yaml')  // drop its reported $ (checked against the catalog price)
      text = text.replace(/^gpu:\n/m, 'gpu:\n  usd_per_gpu_hour: 20\n').replace(/^  usd_per_million_tokens: .*\n/m, '');
    fs.writeFileSync(path.join(seeds, f), text);
  }
  return [seeds, committedRuns(dir)];
}

/** Row ids of a group's table as shown. */
async function shownIds(page, groupId) {
  return page.locator(`section#${groupId} table.board tbody tr:not([hidden])`).evaluateAll((r) => r.map((x) => x.dataset.id));
}

async function checkSort(page, board) {
  for (const g of board.groups) {
    const header = page.locator(`section#${g.id} table.board th[data-key="usd"]`);
    await header.click();
    const byUsd = (sign) => g.entries.slice().sort((a, b) => {
      const x = a.usd_per_million_tokens, y = b.usd_per_million_tokens;
      if (x === null || y === null) return (x === null) - (y === null) || a.rank - b.rank;
      return (x - y) * sign || a.rank - b.rank;
    }).map((e) => e.id);
    check(JSON.stringify(await shownIds(page, g.id)) === JSON.stringify(byUsd(1)), `${g.id} sorted by $ ascending`);
    check(await header.getAttribute('aria-sort') === 'ascending', 'aria-sort ascending');
    await header.click();
    check(JSON.stringify(await shownIds(page, g.id)) === JSON.stringify(byUsd(-1)), `${g.id} sorted by $ descending`);
    await page.locator(`section#${g.id} table.board th[data-key="rank"]`).click();
    check(JSON.stringify(await shownIds(page, g.id)) === JSON.stringify(g.entries.map((e) => e.id)), `${g.id} back in rank order`);
  }
  const seed = board.groups.find((g) => g.gpu_type === 'B200');
  await page.locator(`section#${seed.id} table.board th[data-key="usd"]`).click();
  const first = (await shownIds(page, seed.id))[0];
  check(first !== seed.entries[0].id, `the cheapest B200 entry (${first}) is not the fastest`);
}

async function filterTo(page, select, value) {
  await page.selectOption(select, value);
  return (await page.locator('table.board tbody tr:not([hidden])').evaluateAll((r) => r.map((x) => x.dataset.id))).sort();
}

async function checkFilters(page, board) {
  const all = board.groups.flatMap((g) => g.entries.map((e) => Object.assign({ group: g }, e)));
  const want = (pred) => all.filter(pred).map((e) => e.id).sort();
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  check(same(await filterTo(page, '#f-gpu', 'B200'), want((e) => e.gpu.type === 'B200')), 'GPU type B200');
  check(!(await page.locator('section.group:not([hidden]) svg.chart[id^="steps-"]').count()), 'run sections hidden');
  await page.selectOption('#f-gpu', '');
  check(same(await filterTo(page, '#f-backend', 'torch'), want((e) => e.backend === 'torch')), 'backend torch');
  check(await page.locator(`section#${board.groups.find((g) => g.gpu_type === 'B200').id}`).isHidden(), 'emptied group hidden');
  check(same(await filterTo(page, '#f-status', 'verified'), []), 'status verified and backend torch: none');
  await page.selectOption('#f-backend', '');
  check(same(await filterTo(page, '#f-status', 'verified'), want((e) => e.status === 'verified')), 'status verified');
  const count = await page.locator('#f-count').textContent();
  check(count === `${want((e) => e.status === 'verified').length} of ${all.length} entries shown`, `count: ${count}`);
  await page.selectOption('#f-status', '');
  check(same(await filterTo(page, '#f-gpu', ''), want(() => true)), 'all again');
}

main('sort_filter', async () => {
  const dir = path.join(outDir, 'sort_filter');
  const board = report(inputs(dir), path.join(dir, 'report'));
  const s = await openBrowser();
  try {
    await s.page.goto(fileUrl(path.join(dir, 'report', 'leaderboard.html')));
    await checkSort(s.page, board);
    await s.page.screenshot({ path: path.join(dir, 'sorted-by-usd.png') });
    await checkFilters(s.page, board);
    checkClean(s);
  } finally {
    await s.browser.close();
  }
  return `${board.groups.length} groups sorted by $ / 1M tokens as leaderboard.json orders them; filters checked`;
});
