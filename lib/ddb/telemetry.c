/* telemetry.c: the span that requests started on a thread become children of. A
 * thread-local, like the reference's ambient activity: a thread started by the caller
 * does not inherit it (hand it on with ddb_telemetry_set_parent). */
#include "internal.h"

static _Thread_local uint64_t tl_parent_span;

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
