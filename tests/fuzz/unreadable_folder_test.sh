#!/usr/bin/env bash
# unreadable-subfolder-skipped (case of 2026-12-02, issue 33 kind 5): validate reports a folder it cannot read,
# counts it as a folder (never as a recipe) and exits 1. Root reads any folder, so as root the binary runs as
# nobody through setpriv, as the case's run.sh does (exit 77, skipped, when neither is possible).
#   unreadable_folder_test.sh RECIPEBENCH TINY_RECIPE
set -uo pipefail
rb=$1; tiny=$2
d=$(mktemp -d); chmod 755 "$d"
trap 'chmod 755 "$d/recipes/locked" 2>/dev/null; rm -rf "$d"' EXIT
mkdir -p "$d/recipes/locked"
cp "$tiny" "$d/recipes/top.yaml"; cp "$tiny" "$d/recipes/locked/hidden.yaml"; chmod 644 "$d"/recipes/*.yaml
chmod 000 "$d/recipes/locked"
as=()
if [ "$(id -u)" = 0 ]; then
  command -v setpriv > /dev/null || { echo "root without setpriv: skipped"; exit 77; }
  as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
check() {  # ARGS... : runs validate, prints its output and exit status
  rc=0; timeout 20 "${as[@]}" "$rb" validate "$@" > "$d/out" 2>&1 || rc=$?
  echo "\$ validate $* -> exit $rc"; cat "$d/out"
}
locked_error="$d/recipes/locked: error: cannot be read: Permission denied, expected a readable folder"
check "$d/recipes"
[ $rc = 1 ] && grep -qxF "$locked_error" "$d/out" && grep -qx '1 recipe: 1 passed, 0 failed (0 errors); 1 folder unreadable' "$d/out" || exit 1
check "$d/recipes/locked"
[ $rc = 1 ] && grep -qxF "$locked_error" "$d/out" && grep -qx '0 recipes: 0 passed, 0 failed (0 errors); 1 folder unreadable' "$d/out" || exit 1
check "$d/recipes" --format json
[ $rc = 1 ] && grep -q '"unreadable_folders": 1' "$d/out" && grep -q '"recipes": 1,' "$d/out" || exit 1
echo ok
