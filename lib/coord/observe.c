/* observe.c: what the lock layer tells operators -- its spans (Lock.TryAcquire,
 * Lock.Acquire, Lock.Renew, Lock.Release), its four metrics, and its log events 40-49,
 * all through the telemetry and the log sink of the table's client. */
#include "coord_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ddb_private.h"

uint64_t dl_span_start(ddb_client *c, const char *span_name, uint64_t parent,
                       const uint64_t *links, size_t n_links, const char *table,
                       const char *lock_name)
{
    uint64_t id = ddb__span_start(ddb_client_telemetry(c), span_name, parent, links, n_links);
    ddb__span_str(ddb_client_telemetry(c), id, "db.system.name", "aws.dynamodb");
    ddb__span_str(ddb_client_telemetry(c), id, "db.collection.name", table);
    ddb__span_str(ddb_client_telemetry(c), id, "dynalock.lock.name", lock_name);
    return id;
}

const char *dl_error_type(const ddb_error *e, int rc)
{
    if (e && e->aws_type[0])
        return e->aws_type;
    return ddb_error_name(rc ? rc : (e ? e->code : DDB_ESERVICE));
}

static void metric(ddb_client *c, const char *name, const char *unit, const ddb_attr *attrs,
                   size_t n)
{
    const ddb_telemetry *t = ddb_client_telemetry(c);
    if (t && t->metric)
        t->metric(t->arg, name, unit, 1.0, attrs, n);
}

void dl_metric_acquisition(ddb_client *c, const char *table, bool takeover)
{
    ddb_attr a[] = {
        {.key = "db.collection.name", .type = DDB_ATTR_STR, .v.s = table},
        {.key = "dynalock.lock.takeover", .type = DDB_ATTR_BOOL, .v.b = takeover},
    };
    metric(c, "dynalock.lock.acquisitions", "{lease}", a, 2);
}

void dl_metric_renewal(ddb_client *c, const char *table, const char *error_type)
{
    ddb_attr a[] = {
        {.key = "db.collection.name", .type = DDB_ATTR_STR, .v.s = table},
        {.key = "error.type", .type = DDB_ATTR_STR, .v.s = error_type},
    };
    metric(c, "dynalock.lock.renewals", "{renewal}", a, error_type ? 2 : 1);
}

void dl_metric_loss(ddb_client *c, const char *table, ddb_loss_reason reason)
{
    ddb_attr a[] = {
        {.key = "db.collection.name", .type = DDB_ATTR_STR, .v.s = table},
        {.key = "dynalock.lock.loss_reason", .type = DDB_ATTR_STR,
         .v.s = ddb_loss_reason_name(reason)},
    };
    metric(c, "dynalock.lock.losses", "{lease}", a, 2);
}

void dl_metric_contention_retry(ddb_client *c, const char *table, const char *error_type)
{
    ddb_attr a[] = {
        {.key = "db.collection.name", .type = DDB_ATTR_STR, .v.s = table},
        {.key = "error.type", .type = DDB_ATTR_STR, .v.s = error_type},
    };
    metric(c, "dynalock.lock.contention_retries", "{retry}", a, 2);
}

void dl_log(ddb_client *c, int level, int event_id, const char *const *fields,
            const char *fmt, ...)
{
    if (!ddb__client_log_enabled(c, level))
        return;
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    ddb_log_field f[12];
    size_t n = 0;
    for (size_t i = 0; fields && fields[i] && n < sizeof f / sizeof f[0]; i += 2) {
        if (!fields[i + 1])
            continue; /* a field without a value (no holder label) is left out */
        f[n].key = fields[i];
        f[n].value = fields[i + 1];
        n++;
    }
    ddb__client_log(c, level, event_id, DDB__LOCK_LOG_CATEGORY, message, f, n);
}

const char *ddb_loss_reason_name(ddb_loss_reason r)
{
    switch (r) {
    case DDB_LOSS_TAKEN_OVER:
        return "taken_over";
    case DDB_LOSS_DELETED:
        return "deleted";
    case DDB_LOSS_EXPIRED:
        return "expired";
    case DDB_LOSS_TABLE_NOT_FOUND:
        return "table_not_found";
    case DDB_LOSS_NONE:
    default:
        return "none";
    }
}
