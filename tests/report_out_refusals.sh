#!/bin/sh
# `report --out` refuses what is not a folder of the user's own (harness/util/output_folder.h): device and kernel
# folders, system folders, a file, a device, a link to /dev; each at <command line>, exit 2, nothing written there.
# Then a folder of one's own is written. Usage: report_out_refusals.sh RECIPEBENCH RECIPE WORK_DIR
set -u
rb=$1 recipe=$2 d=$3
rm -rf "$d"; mkdir -p "$d"; printf 'keep me\n' > "$d/file-out"; ln -s /dev "$d/dev-link"
want=', expected a folder of your own (not a file, device, kernel or system folder)'
refused() {  # OUT, the message's middle part
  rc=0; out=$(timeout 60 "$rb" report "$recipe" --out "$1" 2>&1) || rc=$?
  [ "$rc" -eq 2 ] || { echo "--out $1: exit $rc, expected 2: $out"; exit 1; }
  [ "$out" = "<command line>: error: --out: $2$want" ] || { echo "--out $1: $out"; exit 1; }
}
refused /dev '/dev: a device or kernel folder'
refused /dev/shm/rb '/dev/shm/rb: a device or kernel folder'
refused /dev/null '/dev/null (a character device)'
refused /sys/kernel '/sys/kernel: a device or kernel folder'
refused /etc '/etc: a system folder'
refused /usr/share/rb '/usr/share/rb: inside a system folder'
refused / '/: a system folder'
refused /tmp '/tmp: a system folder'
refused "$d/file-out" "$d/file-out (a regular file)"
refused "$d/dev-link" "$d/dev-link ($(readlink -f /dev)): a device or kernel folder"
for f in /dev/leaderboard.json /etc/leaderboard.json /leaderboard.json; do
  [ ! -e "$f" ] || { echo "$f written"; exit 1; }
done
[ "$(cat "$d/file-out")" = 'keep me' ] || { echo "file-out changed"; exit 1; }
"$rb" report "$recipe" --out "$d/board" | grep -q '^ranked 1 entry in 1 group' || exit 1
test -s "$d/board/leaderboard.json" && echo "report --out: 10 refusals located at <command line>, exit 2; a folder of one's own written"
