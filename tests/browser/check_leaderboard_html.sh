#!/usr/bin/env bash
# Renders the leaderboard of the seed recipes in headless Chromium and checks what the browser shows:
# the three rows in rank order with the seed page's figures, and a screenshot of the page.
# Usage: check_leaderboard_html.sh RECIPEBENCH CHROMIUM RECIPES_DIR OUT_DIR
set -euo pipefail
bin=$1 chromium=$2 recipes=$3 out=$4
rm -rf "$out"; mkdir -p "$out"
"$bin" report "$recipes" --out "$out" >/dev/null
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --user-data-dir="$out/profile")
# The DOM as the browser parsed it (after layout): the table's text, row by row.
timeout 90 "$chromium" "${flags[@]}" --dump-dom "file://$out/leaderboard.html" 2>/dev/null > "$out/dom.html"
rows=$(grep -o '<td class="rank"><a href="#[^"]*">#[0-9]*</a></td><td class="num">[0-9,.]*</td><td class="num">\$[0-9.]*</td><td class="num">[0-9]*</td>' "$out/dom.html" \
       | sed -E 's/<[^>]+>/ /g; s/ +/ /g; s/^ //; s/ $//')
expected=$'#1 1,232.5 $3.21 64\n#2 1,130.7 $3.50 64\n#3 1,075.5 $3.68 48'
if [ "$rows" != "$expected" ]; then
  echo "rows seen by the browser:"; echo "$rows"; echo "expected:"; echo "$expected"; exit 1
fi
grep -q 'TP2 PP8 VPP2 EP8 DP4</span><span class="layout-hl">max 16,384 tokens/GPU, VPP 2, no offload' "$out/dom.html"
timeout 90 "$chromium" "${flags[@]}" --window-size=1366,900 --screenshot="$out/leaderboard.png" \
  "file://$out/leaderboard.html" >/dev/null 2>&1
test -s "$out/leaderboard.png"
echo "browser shows the three seed rows in order; screenshot: $out/leaderboard.png"
