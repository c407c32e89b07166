#!/bin/sh
# Hidden tests for backup.sh; run from the project root.
set -u
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

cd "$tmp" || exit 1
mkdir src
printf 'plain\n' > src/plain.txt
printf 'notes\n' > "src/my notes.txt"
printf 'two spaces\n' > "src/two  spaces.txt"

# plain names
if out=$(sh "$root/backup.sh" dest src/plain.txt) \
    && [ "$out" = "backed up src/plain.txt" ] \
    && [ "$(cat dest/plain.txt.bak)" = "plain" ]; then
    ok "plain names"
else
    fail "plain names"
fi

# names with spaces
if out=$(sh "$root/backup.sh" dest2 "src/my notes.txt" "src/two  spaces.txt" 2>&1) \
    && [ "$out" = "backed up src/my notes.txt
backed up src/two  spaces.txt" ] \
    && [ "$(cat "dest2/my notes.txt.bak")" = "notes" ] \
    && [ "$(cat "dest2/two  spaces.txt.bak")" = "two spaces" ]; then
    ok "names with spaces"
else
    fail "names with spaces: $out"
fi

# destination with a space
if sh "$root/backup.sh" "old copies" src/plain.txt > /dev/null 2>&1 \
    && [ "$(cat "old copies/plain.txt.bak")" = "plain" ] \
    && [ ! -e old ] && [ ! -e copies ]; then
    ok "destination with a space"
else
    fail "destination with a space"
fi

# a failing copy still fails
if sh "$root/backup.sh" dest3 src/missing.txt > /dev/null 2>&1; then
    fail "a missing file gives a non-zero exit status"
else
    ok "a missing file gives a non-zero exit status"
fi

[ "$fails" -eq 0 ]
