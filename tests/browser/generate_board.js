// Generated test data for the leaderboard at scale (issue 46): COUNT recipes made from the seed's two B200 recipes
// (64 GPUs and 48 GPUs), each marked `generated: tests/browser/generate_board.js` (the page says "generated test
// data" on its row and card and above the groups), with its own author, speed, price and status (1 in 4 measured,
// the others verified), in three groups (global batch 128, 256 and 512: the group key), two GPU counts in each. Deterministic: the same COUNT gives the same files.
//
//   node tests/browser/generate_board.js SOURCE_DIR OUT_DIR [COUNT]    # writes OUT_DIR/gen-0000.yaml ...
'use strict';
const fs = require('fs');
const path = require('path');

const MARK = 'tests/browser/generate_board.js';
const TEMPLATES = ['attune-tp2-pp8-ep8-vpp2-mt16k.yaml', 'attune-48gpu-tp2-pp6-ep8.yaml'];
const BATCHES = [128, 256, 512];

/** Recipe i of a generated board, from `templates` (the seed files' text). */
function recipeText(templates, i) {
  const seed = templates[i % 5 < 3 ? 0 : 1];  // 3 in 5 on 64 GPUs, 2 in 5 on 48
  const batch = BATCHES[Math.floor(i / 7) % BATCHES.length];
  const tps = (600 + ((i * 7919) % 1000) + i / 10000).toFixed(4);  // distinct speeds in a scrambled order
  const price = (4 + (i % 17) * 0.5).toFixed(2);
  return `generated: ${MARK}\n` + seed
    .replace(/^status: verified$/m, `status: ${i % 4 === 3 ? 'measured' : 'verified'}`)  // a filter to work on
    .replace(/^  name: ATTUNE$/m, `  name: Generated team ${i}`)
    .replace(/^gpu:\n/m, `gpu:\n  usd_per_gpu_hour: ${price}\n`)
    .replace(/^  global_batch: 128$/m, `  global_batch: ${batch}`)
    .replace(/^  tokens_per_s_per_gpu: .*$/m, `  tokens_per_s_per_gpu: ${tps}`)
    .replace(/^  (usd_per_million_tokens|mfu|window_tokens|gpu_hours): .*\n/gm, '');  // recomputed by the report
}

/** Writes `count` generated recipes into `dir` (emptied first); returns their paths. */
function generate(sourceDir, dir, count) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const templates = TEMPLATES.map((f) => fs.readFileSync(path.join(sourceDir, 'recipes/qwen3.5-397b-a17b/b200', f), 'utf8'));
  const files = [];
  for (let i = 0; i < count; i++) {
    const file = path.join(dir, `gen-${String(i).padStart(4, '0')}.yaml`);
    fs.writeFileSync(file, recipeText(templates, i));
    files.push(file);
  }
  return files;
}

module.exports = { generate, MARK };

if (require.main === module) {
  const [sourceDir, dir, count] = process.argv.slice(2);
  if (!dir) {
    console.error('usage: node generate_board.js SOURCE_DIR OUT_DIR [COUNT]');
    process.exit(2);
  }
  console.log(`${generate(sourceDir, dir, Number(count || 1000)).length} generated recipes in ${dir}`);
}
