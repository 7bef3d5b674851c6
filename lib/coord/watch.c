/* watch.c: following a lock -- strongly consistent reads at a waiting contender's pace,
 * a call to the caller at each change of holder, fencing token or value. A watch only
 * reads: it writes nothing and keeps its memory of record versions to itself, so it
 * never hastens a takeover by its lock table. */
#include "coord_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_private.h"

#define DL_WATCH_FREE_POLL_MS 1000LL
#define DL_WATCH_HELD_POLL_MAX_MS 10000LL

/* The same kind of errors the election rides out: DynamoDB is there but busy, or was
 * not reached this time. */
static bool watch_transient(int rc, const ddb_error *e)
{
    switch (rc) {
    case DDB_ETHROTTLED:
    case DDB_ENETWORK:
    case DDB_ETIMEDOUT:
    case DDB_ECREDENTIALS:
        return true;
    default:
        return e->http_status >= 500 && e->http_status <= 599;
    }
}

/* What the caller is told about: holder, token, value (and whether there is an item). */
static bool changed(const ddb_lock_state *a, const ddb_lock_state *b)
{
    return a->exists != b->exists || a->is_held != b->is_held ||
           a->fencing_token != b->fencing_token || strcmp(a->owner, b->owner) != 0 ||
           a->has_value != b->has_value || strcmp(a->value, b->value) != 0;
}

int ddb_lock_table_watch(ddb_lock_table *l, const char *name, const ddb_lock_watch_options *o,
                         ddb_lock_watch_fn fn, void *arg, ddb_cancel *stop, ddb_error *err)
{
    ddb_lock_watch_options defaults = {0};
    if (!o)
        o = &defaults;
    ddb_error_clear(err);
    if (!l || !fn)
        return ddb__fail(err, DDB_EINVAL, "The lock table or the function of a watch is NULL.");
    int rc = ddb_lock_name_check(name, err);
    if (rc != 0)
        return rc;
    if (o->free_poll_ms < 0)
        return ddb__fail(err, DDB_EINVAL,
                         "The poll of a free lock is %lld ms; it must be 0 (the default) or "
                         "more.",
                         (long long)o->free_poll_ms);
    int64_t free_poll_ms = o->free_poll_ms ? o->free_poll_ms : DL_WATCH_FREE_POLL_MS;

    /* Two states, the last told and the one just read: each is 2.5 KB, kept off the
     * stack of a caller that may be small. */
    ddb_lock_state *told = calloc(2, sizeof *told);
    if (!told)
        return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    ddb_lock_state *now_state = told + 1;
    bool have_told = false;
    int64_t first_seen_ns = 0;  /* of the record version in `told`'s last read */
    char seen_rvn[DDB_LOCK_ID_MAX_BYTES + 1] = "";
    char seen_owner[DDB_LOCK_ID_MAX_BYTES + 1] = "";
    ddb_error e;
    ddb_error_clear(&e);
    /* Busy for a fake clock's settle from a read until the wait for the next. */
    DDB__HOLD_SCOPE(l->clock);
    for (;;) {
        if (ddb_cancel_is_set(stop)) {
            rc = ddb__fail(&e, DDB_ECANCELED, "The watch of lock \"%s\" was cancelled.", name);
            break;
        }
        ddb_item *item = NULL;
        rc = dl_item_read(l, name, stop, &item, &e);
        int64_t at = ddb_clock_mono_ns(l->clock);
        int64_t wait_ms = free_poll_ms;
        if (rc == 0) {
            rc = dl_state_of(l, name, item, now_state, &e);
            ddb_item_free(item);
            if (rc != 0)
                break;
            if (now_state->is_held) {
                if (strcmp(seen_rvn, now_state->record_version) != 0 ||
                    strcmp(seen_owner, now_state->owner) != 0) {
                    snprintf(seen_rvn, sizeof seen_rvn, "%s", now_state->record_version);
                    snprintf(seen_owner, sizeof seen_owner, "%s", now_state->owner);
                    first_seen_ns = at;
                }
                now_state->unchanged_ms = (at - first_seen_ns) / DL_NS_PER_MS;
                wait_ms = dl_third_ms(now_state->lease_ms);
                if (wait_ms > DL_WATCH_HELD_POLL_MAX_MS)
                    wait_ms = DL_WATCH_HELD_POLL_MAX_MS;
            } else {
                seen_rvn[0] = seen_owner[0] = '\0';
            }
            if (!have_told || changed(told, now_state)) {
                *told = *now_state;
                have_told = true;
                if (fn(arg, name, now_state) != 0) {
                    rc = 0;
                    break;
                }
            }
        } else if (rc == DDB_ECANCELED && ddb_cancel_is_set(stop)) {
            break;
        } else if (!watch_transient(rc, &e)) {
            break;
        } else {
            /* The client tried again already; the next poll is the next try. */
            ddb_error_clear(&e);
            rc = 0;
        }
        rc = ddb__clock_wait_until(l->clock, at + wait_ms * DL_NS_PER_MS, stop);
        if (rc != 0) {
            rc = ddb__fail(&e, DDB_ECANCELED, "The watch of lock \"%s\" was cancelled.", name);
            break;
        }
    }
    free(told);
    if (rc != 0 && err)
        *err = e;
    return rc;
}
