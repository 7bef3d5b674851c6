/* telemetry.c: the span that requests started on a thread become children of (a
 * thread-local, like the reference's ambient activity: a thread started by the caller
 * does not inherit it; hand it on with ddb_telemetry_set_parent), and the span plumbing
 * shared by the client's request spans (client.c) and the lock layer's (coord/observe.c):
 * each call takes the client's telemetry (ddb_client_telemetry) and does nothing when
 * it is NULL or the span is 0. */
#include "internal.h"

#include <stdatomic.h>

static _Thread_local uint64_t tl_parent_span;
/* Span ids: unique in the process, so unique per client as ddb.h promises. */
static atomic_uint_fast64_t next_span = 1;

uint64_t ddb_telemetry_set_parent(uint64_t span_id)
{
    uint64_t prev = tl_parent_span;
    tl_parent_span = span_id;
    return prev;
}

uint64_t ddb_telemetry_get_parent(void)
{
    return tl_parent_span;
}

uint64_t ddb__span_start(const ddb_telemetry *t, const char *name, uint64_t parent,
                         const uint64_t *links, size_t n_links)
{
    if (!t || (!t->span_start && !t->span_attr && !t->span_end))
        return 0;
    uint64_t id = atomic_fetch_add_explicit(&next_span, 1, memory_order_relaxed);
    if (t->span_start)
        t->span_start(t->arg, id, parent, name, links, n_links);
    return id;
}

static void span_attr(const ddb_telemetry *t, uint64_t span, const ddb_attr *a)
{
    if (span && t && t->span_attr)
        t->span_attr(t->arg, span, a);
}

void ddb__span_str(const ddb_telemetry *t, uint64_t span, const char *key, const char *v)
{
    if (v)
        span_attr(t, span, &(ddb_attr){ .key = key, .type = DDB_ATTR_STR, .v.s = v });
}

void ddb__span_int(const ddb_telemetry *t, uint64_t span, const char *key, int64_t v)
{
    span_attr(t, span, &(ddb_attr){ .key = key, .type = DDB_ATTR_INT, .v.i = v });
}

void ddb__span_bool(const ddb_telemetry *t, uint64_t span, const char *key, bool v)
{
    span_attr(t, span, &(ddb_attr){ .key = key, .type = DDB_ATTR_BOOL, .v.b = v });
}

void ddb__span_end(const ddb_telemetry *t, uint64_t span, const char *error_type)
{
    if (span && t && t->span_end)
        t->span_end(t->arg, span, error_type);
}
