/* otel_json.c: the pieces of the OTLP/JSON encoding (protobuf's JSON mapping with
 * lowerCamelCase names, 64-bit integers as strings, ids as hex strings) that the span
 * and metric payloads of otel.c are made of. Written by hand on a dl_buf: a payload is
 * built once and sent, so no tree of objects is needed. */
#include "otel_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void ddb__otel_json_str(dl_buf *b, const char *s)
{
    static const char hx[] = "0123456789abcdef";
    dl__buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') {
            dl__buf_putc(b, '\\');
            dl__buf_putc(b, (char)*p);
        } else if (*p < 0x20) {
            char e[7] = { '\\', 'u', '0', '0', hx[*p >> 4], hx[*p & 15], 0 };
            dl__buf_puts(b, e);
        } else {
            dl__buf_putc(b, (char)*p);
        }
    }
    dl__buf_putc(b, '"');
}

void ddb__otel_json_u64s(dl_buf *b, uint64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "\"%" PRIu64 "\"", v);
    dl__buf_puts(b, t);
}

static void json_double(dl_buf *b, double d)
{
    char t[32];
    if (isnan(d))
        dl__buf_puts(b, "\"NaN\"");
    else if (isinf(d))
        dl__buf_puts(b, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    else {
        snprintf(t, sizeof t, "%.17g", d);
        dl__buf_puts(b, t);
    }
}

void ddb__otel_json_attr(dl_buf *b, const ddb_attr *a)
{
    char t[32];
    dl__buf_puts(b, "{\"key\":");
    ddb__otel_json_str(b, a->key);
    dl__buf_puts(b, ",\"value\":{");
    switch (a->type) {
    case DDB_ATTR_STR:
        dl__buf_puts(b, "\"stringValue\":");
        ddb__otel_json_str(b, a->v.s);
        break;
    case DDB_ATTR_INT:
        snprintf(t, sizeof t, "\"intValue\":\"%" PRId64 "\"", a->v.i);
        dl__buf_puts(b, t);
        break;
    case DDB_ATTR_BOOL:
        dl__buf_puts(b, a->v.b ? "\"boolValue\":true" : "\"boolValue\":false");
        break;
    case DDB_ATTR_DOUBLE:
        dl__buf_puts(b, "\"doubleValue\":");
        json_double(b, a->v.d);
        break;
    }
    dl__buf_puts(b, "}}");
}

void ddb__otel_json_resource(dl_buf *b, const ddb__otel_config *c)
{
    dl__buf_puts(b, "\"resource\":{\"attributes\":[");
    for (size_t i = 0; i < c->n_resource; i++) {
        if (i)
            dl__buf_putc(b, ',');
        ddb_attr a = { .key = c->resource[i].key, .type = DDB_ATTR_STR };
        a.v.s = c->resource[i].value;
        ddb__otel_json_attr(b, &a);
    }
    dl__buf_puts(b, "]}");
}

/* OpenTelemetry's default explicit bucket boundaries. */
static const double default_bounds[] = { 0, 5, 10, 25, 50, 75, 100, 250, 500, 750,
                                         1000, 2500, 5000, 7500, 10000 };
/* The database client conventions' advice for db.client.operation.duration (seconds):
 * the default bounds would put every request in the first bucket. */
static const double seconds_bounds[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10 };

const double *ddb__otel_bounds(const char *unit, size_t *n)
{
    if (unit && strcmp(unit, "s") == 0) {
        *n = sizeof seconds_bounds / sizeof *seconds_bounds;
        return seconds_bounds;
    }
    *n = sizeof default_bounds / sizeof *default_bounds;
    return default_bounds;
}

void ddb__otel_json_double(dl_buf *b, double d)
{
    json_double(b, d);
}
