/* otel.h: libddb_otel, an OpenTelemetry exporter for dynalock's spans and metrics.
 *
 * It implements a ddb_telemetry (ddb.h) and sends what the client and the lock layer
 * report to an OpenTelemetry collector over OTLP/HTTP with the JSON encoding
 * (POST /v1/traces and /v1/metrics). Setting it up is one line:
 *
 *     ddb_otel *otel = ddb_otel_new(NULL, &err);           (everything from OTEL_*)
 *     ddb_client_options o = { .telemetry = ddb_otel_telemetry(otel) };
 *     ...
 *     ddb_client_free(client);
 *     ddb_otel_free(otel);                                  (flushes, bounded)
 *
 * Ownership as in ddb.h: strings are copied, the caller frees what it gets with the
 * matching _free, and ddb_otel_free accepts NULL. An exporter serves one client at a time:
 * span ids are unique per client only (ddb_telemetry).
 * Link with -lddb_otel (pkg-config dynalock-otel, CMake dynalock::ddb_otel).
 */
#ifndef DYNALOCK_OTEL_H
#define DYNALOCK_OTEL_H

#include <stdbool.h>
#include <stdint.h>

#include <dynalock/ddb.h>
#include <dynalock/export.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ddb_otel ddb_otel;

/* Every field's zero value means "from the environment, else OpenTelemetry's default".
 * An explicit field wins over the per-signal variable (OTEL_EXPORTER_OTLP_TRACES_*,
 * OTEL_EXPORTER_OTLP_METRICS_*), which wins over the general one. */
typedef struct ddb_otel_options {
    /* Base URL; /v1/traces and /v1/metrics are appended. NULL: OTEL_EXPORTER_OTLP_ENDPOINT,
     * else http://localhost:4318. */
    const char *endpoint;
    /* Full URLs, used as they are. NULL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT /
     * OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, else from the base URL. */
    const char *traces_endpoint;
    const char *metrics_endpoint;
    /* Extra request headers, "name=value,name2=value2" with percent-encoded values.
     * NULL: OTEL_EXPORTER_OTLP_{TRACES,METRICS}_HEADERS, else OTEL_EXPORTER_OTLP_HEADERS. */
    const char *headers;
    /* Per export request. 0: OTEL_EXPORTER_OTLP_{TRACES,METRICS}_TIMEOUT, else
     * OTEL_EXPORTER_OTLP_TIMEOUT, else 10 000 ms. */
    int64_t timeout_ms;
    /* service.name. NULL: OTEL_SERVICE_NAME, else service.name of the resource
     * attributes, else "unknown_service". */
    const char *service_name;
    /* Resource attributes "key=value,..." with percent-encoded values. NULL:
     * OTEL_RESOURCE_ATTRIBUTES. A malformed list is ignored as a whole. */
    const char *resource_attributes;
    /* Ended spans waiting for export; a span that finds it full is dropped and counted.
     * 0: OTEL_BSP_MAX_QUEUE_SIZE, else 2048. */
    int max_queue_size;
    /* Spans per request. 0: OTEL_BSP_MAX_EXPORT_BATCH_SIZE, else 512. */
    int max_export_batch_size;
    /* The delay between two exports of spans. 0: OTEL_BSP_SCHEDULE_DELAY, else 5000 ms. */
    int64_t schedule_delay_ms;
    /* The period of the metrics' export. 0: OTEL_METRIC_EXPORT_INTERVAL, else 60 000 ms. */
    int64_t metric_export_interval_ms;
    /* What ddb_otel_free may spend on its last flush. 0: 5000 ms. */
    int64_t shutdown_timeout_ms;
    /* Attempts of one export on 429, 502, 503, 504 or a network failure. 0: 5. */
    int max_attempts;
    /* The first backoff of a retried export, doubled each time (Retry-After wins).
     * 0: 1000 ms. */
    int64_t retry_base_ms;
    /* The clock of the schedule, the backoff and the timestamps: give the client's.
     * NULL: the system clock. Referenced, not copied. */
    ddb_clock *clock;
    /* true: read no OTEL_* variable (the fields and the defaults only). */
    bool ignore_environment;
} ddb_otel_options;

/* Creates an exporter and its background thread (which waits on opt->clock); does no
 * I/O until the first export. opt may be NULL (all from the environment). NULL with err
 * on a bad option (DDB_EINVAL: an endpoint that is not http:// or https://, a bad
 * header list, a negative number). Thread: any. */
DDB_API ddb_otel *ddb_otel_new(const ddb_otel_options *opt, ddb_error *err);

/* Stops the background thread, sends what is queued and the metrics within the options'
 * shutdown timeout (one attempt each, never longer), then frees the exporter. The
 * clients that use its telemetry must be freed first. NULL is a no-op. Thread: any. */
DDB_API void ddb_otel_free(ddb_otel *o);

/* Borrowed, valid until ddb_otel_free: the callbacks to put in
 * ddb_client_options.telemetry. Thread: any. */
DDB_API const ddb_telemetry *ddb_otel_telemetry(ddb_otel *o);

/* Exports the ended spans and the metrics now, on the calling thread, one attempt per
 * request, each bounded by what is left of `timeout_ms` (<= 0: the options' timeout).
 * 0, or the first failure (DDB_ENETWORK, DDB_ETIMEDOUT, DDB_ESERVICE with the HTTP
 * status in err); what failed is dropped and counted. Thread: any. */
DDB_API int ddb_otel_flush(ddb_otel *o, int64_t timeout_ms, ddb_error *err);

typedef struct ddb_otel_stats {
    uint64_t spans_exported;     /* spans a collector accepted */
    uint64_t spans_queue_full;   /* spans dropped because the queue was full */
    uint64_t spans_failed;       /* spans dropped after a failed export */
    uint64_t metric_exports;     /* metric requests a collector accepted */
    uint64_t metric_failed;      /* metric requests dropped after a failure */
    uint64_t retries;            /* requests sent again after 429/502/503/504 or no answer */
    int last_http_status;        /* of the last answer, 0 if none */
} ddb_otel_stats;

/* The exporter's counts so far. Thread: any. */
DDB_API void ddb_otel_get_stats(ddb_otel *o, ddb_otel_stats *out);
/* Spans dropped: queue full plus failed exports. Thread: any. */
DDB_API uint64_t ddb_otel_dropped(ddb_otel *o);

/* ---------------------------------------------------------- trace context */

/* "00-" 32 hex "-" 16 hex "-" 2 hex: 55 characters and the NUL. */
#define DDB_OTEL_TRACEPARENT_SIZE 56

/* Makes the spans that start on this thread without a parent (ddb_telemetry_get_parent
 * is 0) children of the remote span of a W3C traceparent, e.g. an incoming request's or
 * the TRACEPARENT of the environment. NULL clears it. DDB_EINVAL if it is not a valid
 * traceparent (version 00, lowercase hex, ids not all zero); the thread's remote parent
 * is then cleared. Thread: any; the remote parent is the calling thread's own. */
DDB_API int ddb_otel_set_remote_parent(ddb_otel *o, const char *traceparent, ddb_error *err);

/* Writes the traceparent of span `span_id` of the client (0: the thread's current span,
 * ddb_telemetry_get_parent, else its remote parent) to out. 0, or DDB_ENOTFOUND when the
 * span is unknown (never started, or ended long ago). Thread: any. */
DDB_API int ddb_otel_traceparent(ddb_otel *o, uint64_t span_id,
                                 char out[DDB_OTEL_TRACEPARENT_SIZE]);

/* A span of the caller's own (kind INTERNAL), child of the thread's current span or
 * remote parent, made the thread's current span (ddb_telemetry_set_parent) so that the
 * library's spans started on this thread become its children. Returns its id (never 0
 * unless out of memory). Thread: any; end it on the same thread. */
DDB_API uint64_t ddb_otel_span_start(ddb_otel *o, const char *name);
/* Sets an attribute of a span of ddb_otel_span_start. Thread: any. */
DDB_API void ddb_otel_span_attr(ddb_otel *o, uint64_t span_id, const ddb_attr *attr);
/* Ends it (error_type NULL on success) and restores the thread's current span to what it
 * was at its start. Thread: the one that started it. */
DDB_API void ddb_otel_span_end(ddb_otel *o, uint64_t span_id, const char *error_type);

#ifdef __cplusplus
}
#endif
#endif
