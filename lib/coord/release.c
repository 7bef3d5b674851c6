/* release.c: the end of a lease -- released by its holder (ddb_lease_release) or by
 * the lock table being freed: the heartbeat stops, the lock is released within the time
 * the lease has left, and the lease leaves its table's list. */
#include "coord_internal.h"

#include <stdlib.h>
#include <string.h>

#include "ddb_private.h"

void dl_lease_release_lock(ddb_lease *lease, ddb_cancel *cancel)
{
    const char *table = ddb_table_name(lease->table);
    uint64_t parent = ddb_telemetry_get_parent();
    uint64_t span = dl_span_start(lease->client, "Lock.Release", parent, NULL, 0, table,
                                  lease->name);
    ddb__span_int(ddb_client_telemetry(lease->client),
                  span, "dynalock.lock.fencing_token", lease->fence);
    uint64_t saved = ddb_telemetry_set_parent(span ? span : parent);
    ddb_error e;
    ddb_error_clear(&e);
    int rc = dl_item_release(lease, cancel, &e);
    ddb_telemetry_set_parent(saved);
    if (rc == DDB_EINDOUBT && !dl_condition_failed(rc, &e)) {
        /* Every answer was lost: the item tells. Free with this lease's token is this
         * release (a new holder would have raised the token); still ours, not applied. */
        ddb_lock_table *l = atomic_load(&lease->locks);
        ddb__lock_item li = {0};
        ddb_error rerr;
        ddb_error_clear(&rerr);
        if (l && dl_item_resolve(l, lease->name, cancel, &li, &rerr) == 0) {
            bool mine = li.held && strcmp(li.owner, lease->owner) == 0;
            if (!mine)
                rc = 0;
            else
                ddb__fail(&e, DDB_EINDOUBT,
                          "the release was not applied: its answer was lost, and the lock "
                          "still names this holder");
        }
        ddb__lock_item_cleanup(&li);
    }
    ddb__span_end(ddb_client_telemetry(lease->client), span, rc ? dl_error_type(&e, rc) : NULL);
    if (dl_condition_failed(rc, &e)) {
        /* Someone else took the lock over, or an earlier attempt whose answer was lost
         * released it: either way it is not this lease's now, and is left alone. */
        return;
    }
    if (rc != 0) {
        ddb_lock_table *l = atomic_load(&lease->locks);
        dl_log(lease->client, DDB_LOG_WARN, DDB_EVENT_RELEASE_FAILED,
               (const char *const[]){"lock", lease->name, "table", table, "error",
                                     dl_error_type(&e, rc), "message", e.message, "holder",
                                     l ? l->holder_label : NULL, NULL},
               "The release of lock \"%s\" in table \"%s\" failed (%s); the lock is free "
               "once its lease runs out.",
               lease->name, table, e.message);
    }
}

void dl_lease_end(ddb_lease *lease)
{
    pthread_mutex_lock(&lease->mu);
    bool again = lease->released;
    lease->released = true;
    int64_t expiry = lease->expiry_ns;
    pthread_mutex_unlock(&lease->mu);
    if (again)
        return;
    ddb_loss_reason loss = (ddb_loss_reason)atomic_load(&lease->loss);
    /* Ended first: a renewal on its way is cancelled, and the work stops. */
    ddb_cancel_set(lease->ended);
    dl_heartbeat_stop(lease);
    pthread_mutex_lock(&lease->mu);
    bool cleaned = lease->cleaned;
    pthread_mutex_unlock(&lease->mu);
    /* A held lease is released within the time it has left; one that ran out may still
     * be ours in the item (unless the heartbeat released it already): releasing frees the
     * lock sooner, bounded by a third of the lease. The condition leaves a lock that
     * someone else has alone. */
    if (loss == DDB_LOSS_NONE || (loss == DDB_LOSS_EXPIRED && !cleaned)) {
        int64_t now = ddb_clock_mono_ns(lease->clock);
        int64_t left_ms = loss == DDB_LOSS_NONE && expiry > now ? (expiry - now) / DL_NS_PER_MS
                                                                : dl_third_ms(lease->lease_ms);
        ddb_cancel *bound = ddb_cancel_new();
        if (bound && ddb_cancel_after(bound, lease->clock, left_ms > 0 ? left_ms : 1) != 0) {
            ddb_cancel_unref(bound);
            bound = NULL;
        }
        dl_lease_release_lock(lease, bound);
        ddb_cancel_unref(bound);
    }
    ddb_lock_table *l = atomic_load(&lease->locks);
    if (l)
        dl_table_remove_lease(l, lease);
    atomic_store(&lease->locks, NULL);
}

void ddb_lease_release(ddb_lease *lease)
{
    if (!lease)
        return;
    pthread_mutex_lock(&lease->mu);
    bool again = lease->caller_let_go;
    lease->caller_let_go = true;
    pthread_mutex_unlock(&lease->mu);
    if (again)
        return;
    /* A lock table freed first has ended it already; the caller's reference is still
     * the caller's to drop. */
    dl_lease_end(lease);
    ddb_lease_unref(lease);
}
