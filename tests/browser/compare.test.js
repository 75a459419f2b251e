// The comparison of the seed's #1 and #3 (recipes/qwen3.5-397b-a17b/b200/): ticked in the page, the fields side
// by side with the differences marked and the ratios of the figures; the marked fields and the ratios are the
// ones `recipebench compare` prints for the same two recipes.
'use strict';
const path = require('path');
const { sourceDir, outDir, check, report, recipebench, openBrowser, checkClean, fileUrl, main } = require('./lib');

const seeds = path.join(sourceDir, 'recipes/qwen3.5-397b-a17b/b200');

/** The "section.field" names `recipebench compare A B` marks with "*", and its B/A ratio of tokens/s per GPU. */
function cliComparison(a, b) {
  const text = recipebench('compare', path.join(seeds, a + '.yaml'), path.join(seeds, b + '.yaml'));
  const marked = text.split('\n').filter((l) => l.startsWith('* ')).map((l) => l.slice(2).split(/\s{2,}/)[0]);
  const tps = text.split('\n').find((l) => l.startsWith('tokens/s per GPU'));
  return { marked: marked.sort(), tpsRatio: tps.trim().split(/\s+/).pop() };
}

main('compare', async () => {
  const dir = path.join(outDir, 'compare');
  const board = report([seeds], path.join(dir, 'report'));
  const g = board.groups[0];
  const [first, , third] = g.entries;
  check(first.rank === 1 && third.rank === 3, 'the seed ranks 1 and 3');
  const s = await openBrowser();
  try {
    await s.page.goto(fileUrl(path.join(dir, 'report', 'leaderboard.html')));
    await s.page.check(`input.pick[value="${first.id}"]`);
    await s.page.check(`input.pick[value="${third.id}"]`);
    const out = s.page.locator('#cmp-out');
    const heads = await out.locator('table.fields thead th').allTextContents();
    check(heads[3] === 'A: ' + first.id && heads[4] === 'B: ' + third.id, 'A is #1 and B is #3: ' + heads);
    const diff = (await out.locator('table.fields tr.diff').evaluateAll((r) => r.map((x) => x.dataset.key))).sort();
    for (const k of ['layout.pp', 'layout.vpp', 'layout.max tokens per GPU', 'hardware.GPUs', 'layout.label'])
      check(diff.includes(k), `${k} marked as different`);
    for (const k of ['layout.tp', 'layout.ep', 'layout.dp', 'layout.dispatcher', 'layout.recompute', 'stack.pytorch'])
      check(!diff.includes(k), `${k} not marked`);
    const ppRow = await out.locator('table.fields tr[data-key="layout.pp"] td').allTextContents();
    check(ppRow[1] === 'layout' && ppRow[3] === '8' && ppRow[4] === '6', 'PP 8 against 6: ' + ppRow);
    const tpsRow = await out.locator('table.figures tbody tr').first().locator('td').allTextContents();
    const expected = +(third.tokens_per_s_per_gpu / first.tokens_per_s_per_gpu).toFixed(2);
    check(tpsRow[0] === 'tokens/s per GPU' && tpsRow[1] === '1,232.5' && tpsRow[2] === '1,075.5', 'figures: ' + tpsRow);
    check(+tpsRow[3] === expected, `tokens/s ratio ${tpsRow[3]} = ${expected}`);
    const cli = cliComparison(first.id, third.id);
    check(JSON.stringify(cli.marked) === JSON.stringify(diff), `page and CLI mark the same fields:\n${diff}\n${cli.marked}`);
    check(cli.tpsRatio === tpsRow[3], `page and CLI give the same ratio: ${tpsRow[3]} vs ${cli.tpsRatio}`);
    await out.screenshot({ path: path.join(dir, 'compare-1-3.png') });
    // Without scripts the group still shows #1 against #2, computed by the report.
    check(await s.page.locator(`section#${g.id} details.compare-default tr.diff`).count() > 0, 'server-side #1 vs #2');
    checkClean(s);
    return `#1 and #3: ${diff.length} fields differ (${diff.join(', ')}); tokens/s B/A ${tpsRow[3]}`;
  } finally {
    await s.browser.close();
  }
});
