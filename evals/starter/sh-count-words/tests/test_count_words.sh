#!/bin/sh
# Hidden tests for count_words.sh; run from the project root.
set -u
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then
        echo "ok: $1"
    else
        echo "FAIL: $1"
        printf 'expected:\n%s\nactual:\n%s\n' "$2" "$3"
        fails=$((fails + 1))
    fi
}

printf 'one two three\nfour\n' > "$tmp/a.txt"
printf '  spaced   out\twords  \n\n' > "$tmp/b.txt"
printf 'no newline at the end' > "$tmp/c.txt"

out=$(cd "$tmp" && sh "$root/count_words.sh" a.txt b.txt c.txt)
tab=$(printf '\t')
check "per-file word counts" "4${tab}a.txt
3${tab}b.txt
5${tab}c.txt
12${tab}total" "$out"

out=$(cd "$tmp" && sh "$root/count_words.sh" c.txt)
check "total" "5${tab}c.txt
5${tab}total" "$out"

out=$(cd "$tmp" && sh "$root/count_words.sh")
check "no files gives a zero total" "0${tab}total" "$out"

[ "$fails" -eq 0 ]
