/* otel_internal.h: what the files of libddb_otel share, and what the unit tests reach
 * through the static library: the configuration from the options and the OTEL_*
 * variables (otel_env.c), W3C traceparent (otel_env.c) and the OTLP/JSON encoding
 * (otel_json.c). Nothing here is exported from the shared library. */
#ifndef DDB_OTEL_INTERNAL_H
#define DDB_OTEL_INTERNAL_H

#include <dynalock/otel.h>

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct ddb__otel_kv {
    char *key;
    char *value;
} ddb__otel_kv;

typedef struct ddb__otel_config {
    char *traces_url, *metrics_url;
    ddb__otel_kv *trace_headers, *metric_headers;
    size_t n_trace_headers, n_metric_headers;
    int64_t traces_timeout_ms, metrics_timeout_ms;
    ddb__otel_kv *resource; /* service.name first */
    size_t n_resource;
    int max_queue, batch, max_attempts;
    int64_t delay_ms, metric_interval_ms, shutdown_ms, retry_base_ms;
} ddb__otel_config;

/* The environment lookup: getenv, or a table of a test's. */
typedef const char *(*ddb__otel_getenv_fn)(void *arg, const char *name);

/* Resolves the configuration: options, then per-signal variables, then general ones,
 * then defaults. DDB_EINVAL with err on a bad value of an option or variable that
 * cannot be ignored (endpoint, headers, numbers); a malformed OTEL_RESOURCE_ATTRIBUTES is
 * ignored as a whole, as the specification says. getenv_fn NULL: getenv. */
int ddb__otel_config_resolve(const ddb_otel_options *opt, ddb__otel_getenv_fn getenv_fn,
                             void *getenv_arg, ddb__otel_config *out, ddb_error *err);
void ddb__otel_config_cleanup(ddb__otel_config *c);

/* "k=v,k2=v2" (W3C Baggage-like: spaces around items trimmed, values percent-decoded;
 * keys non-empty). 0 or DDB_EINVAL (nothing returned); DDB_ENOMEM. */
int ddb__otel_parse_kv_list(const char *s, ddb__otel_kv **out, size_t *n);
void ddb__otel_kv_free(ddb__otel_kv *kv, size_t n);
/* Percent-decodes s[0..n) into a malloc'd string; NULL on a bad escape or a NUL byte. */
char *ddb__otel_percent_decode(const char *s, size_t n);

/* W3C Trace Context: 0 and the ids for a valid traceparent of version 00, else -1. */
int ddb__otel_parse_traceparent(const char *s, uint8_t trace_id[16], uint8_t span_id[8],
                                uint8_t *flags);
void ddb__otel_format_traceparent(const uint8_t trace_id[16], const uint8_t span_id[8],
                                  uint8_t flags, char out[DDB_OTEL_TRACEPARENT_SIZE]);
/* Lowercase hex of n bytes into out (2n characters and a NUL). */
void ddb__otel_hex(const uint8_t *p, size_t n, char *out);

/* JSON helpers of otel_json.c */
void ddb__otel_json_str(dl_buf *b, const char *s);
void ddb__otel_json_attr(dl_buf *b, const ddb_attr *a);
void ddb__otel_json_double(dl_buf *b, double d); /* NaN, Infinity as strings */
void ddb__otel_json_u64s(dl_buf *b, uint64_t v); /* as a JSON string, as OTLP/JSON asks */
void ddb__otel_json_resource(dl_buf *b, const ddb__otel_config *c);

/* The histogram bounds of a metric of this unit: OpenTelemetry's defaults, or the
 * database conventions' advice for a duration in seconds. */
const double *ddb__otel_bounds(const char *unit, size_t *n);

#endif
