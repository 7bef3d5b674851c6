#!/bin/sh
# layers.sh [SRC]: keeps fakedb/src in its layers (docs/internals/fakedb.md). Each file
# of SRC belongs to one layer; a file may include only the headers of its own layer or
# of the layers below, and may not name a function, type or macro that first appears
# in a header of a layer above it (which would be a call upward by a hand-written
# declaration). Inside a layer a .c file may call only the .c files listed after it, so
# that no circle of calls runs between files. A file that no layer lists fails too: a
# new file must choose its layer.
# Exits 0 when the layering holds, 1 with one line per violation otherwise.
set -u
src=${1:-$(dirname "$0")/../../fakedb/src}
cd "$src" || exit 2

# layer number: its headers, then its .c files in call order (each calls only those
# after it); the layers are described in docs/internals/fakedb.md
layers='
1: values.h values.c error.c
2: expr.h expr_internal.h expr_partiql.c expr_legacy.c expr_update.c expr_parse.c expr_eval.c expr_lex.c
3: store.h ttl.c stream_store.c store.c schema.c clock.c
4: ops.h ops.c partiql.c streams.c batch.c txn.c query.c items_ops.c legacy_ops.c tables.c index_update.c meta.c shape.c reply.c capacity.c
5: protocol.h protocol.c encoding.c faults.c metrics.c databases.c
6: server.h server.c admin.c console.c control.c waiters.c settings.c
'

layer_of() {        # no process per lookup: the machine running this may be busy
    _n=
    for _w in $layers; do
        case $_w in
        *:) _n=${_w%:} ;;
        "$1") echo "$_n"; return ;;
        esac
    done
}

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
bad=0

for f in *.c *.h; do
    [ -n "$(layer_of "$f")" ] || { echo "$f: in no layer (add it to tests/fakedb/layers.sh)"; bad=1; }
done

# The names each layer's headers introduce: those not already in a lower layer's header.
: > "$tmp/lower"
for n in 1 2 3 4 5 6; do
    hs=$(printf '%s\n' "$layers" | awk -v n="$n:" '$1 == n { for (i = 2; i <= NF; i++) if ($i ~ /\.h$/) print $i }')
    : > "$tmp/names$n"
    for h in $hs; do
        grep -oE '\b(fakedb__[A-Za-z0-9_]+|FDB_[A-Z0-9_]+|FAKEDB_EXPR_[A-Z0-9_]+)\b' "$h" >> "$tmp/names$n"
    done
    sort -u "$tmp/names$n" | comm -23 - "$tmp/lower" > "$tmp/own$n"
    cat "$tmp/lower" "$tmp/own$n" | sort -u > "$tmp/next" && mv "$tmp/next" "$tmp/lower"
done

# One grep for every include, one per layer for the names: the machine may be busy.
grep -HE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' -- *.c *.h |
    sed 's/^\([^:]*\):.*"\([^"]*\)".*/\1 \2/' > "$tmp/includes"
while read -r f inc; do
    l=$(layer_of "$f")
    if [ -z "$l" ] || [ ! -f "$inc" ]; then
        continue    # a file in no layer (reported above), or a header of common/ or lib/
    fi
    il=$(layer_of "$inc")
    if [ -z "$il" ]; then
        echo "$f: includes $inc, which is in no layer"; bad=1
    elif [ "$il" -gt "$l" ]; then
        echo "$f (layer $l) includes $inc (layer $il)"; bad=1
    fi
done < "$tmp/includes"

below=
for n in 1 2 3 4 5 6; do
    if [ -n "$below" ] && [ -s "$tmp/own$n" ]; then
        # shellcheck disable=SC2086
        grep -HowFf "$tmp/own$n" $below | sort -u > "$tmp/up"
        while IFS=: read -r f name; do
            echo "$f (layer $(layer_of "$f")) names $name (layer $n)"; bad=1
        done < "$tmp/up"
    fi
    below="$below $(printf '%s\n' "$layers" | awk -v n="$n:" '$1 == n { for (i = 2; i <= NF; i++) print $i }' | tr '\n' ' ')"
done

# Inside a layer: the functions each .c file defines (a name at the start of a line,
# followed by "("), and no use of them in a file listed after it. The files are taken
# last first, so that `after` holds those listed after the one being looked at.
for n in 1 2 3 4 5 6; do
    cs=$(printf '%s\n' "$layers" | awk -v n="$n:" '$1 == n { for (i = 2; i <= NF; i++) if ($i ~ /\.c$/) print $i }' | sed -n '1!G;h;$p')
    after=
    for c in $cs; do
        grep -oE '^[a-z].*\b(fakedb__[a-z0-9_]+)\(' "$c" | grep -oE 'fakedb__[a-z0-9_]+\($' |
            tr -d '(' | sort -u > "$tmp/defs"
        if [ -n "$after" ] && [ -s "$tmp/defs" ]; then
            # shellcheck disable=SC2086
            grep -HowFf "$tmp/defs" $after | sort -u > "$tmp/up"
            while IFS=: read -r f name; do
                echo "$f calls $name of $c, which is listed before it in layer $n"; bad=1
            done < "$tmp/up"
        fi
        after="$after $c"
    done
done
exit $bad
