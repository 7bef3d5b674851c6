/* lease.c: a lease on a lock -- its state (expiry on the monotonic clock, loss reason,
 * the ended token), one renewal, the release, and the lease that is current on a
 * thread (the C form of the reference's Lease.Current). */
#include "coord_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_private.h"

ddb_lease *dl_lease_new(ddb_lock_table *l, const char *name, const char *owner,
                        const char *rvn, int64_t lease_ms, int64_t fence, bool takeover,
                        int64_t sent_ns, uint64_t acquire_span)
{
    ddb_lease *lease = calloc(1, sizeof *lease);
    if (!lease)
        return NULL;
    lease->name = strdup(name);
    lease->ended = ddb_cancel_new();
    /* The value the acquire wrote. */
    lease->value = l->lease_value ? strdup(l->lease_value) : NULL;
    if (!lease->name || !lease->ended || (l->lease_value && !lease->value)) {
        free(lease->name);
        free(lease->value);
        ddb_cancel_unref(lease->ended);
        free(lease);
        return NULL;
    }
    atomic_init(&lease->refs, 1);
    atomic_init(&lease->locks, l);
    atomic_init(&lease->loss, DDB_LOSS_NONE);
    lease->table = l->table;
    lease->client = l->client;
    lease->clock = l->clock;
    snprintf(lease->owner, sizeof lease->owner, "%s", owner);
    snprintf(lease->rvn, sizeof lease->rvn, "%s", rvn);
    lease->lease_ms = lease_ms;
    lease->fence = fence;
    lease->takeover = takeover;
    lease->acquire_span = acquire_span;
    lease->last_sent_ns = sent_ns;
    lease->expiry_ns = sent_ns + lease_ms * DL_NS_PER_MS;
    lease->next_attempt_ns = sent_ns + lease_ms * DL_NS_PER_MS / 3;
    pthread_mutex_init(&lease->mu, NULL);
    pthread_cond_init(&lease->idle, NULL);
    return lease;
}

ddb_lease *ddb_lease_ref(ddb_lease *lease)
{
    if (lease)
        atomic_fetch_add(&lease->refs, 1);
    return lease;
}

void ddb_lease_unref(ddb_lease *lease)
{
    if (!lease || atomic_fetch_sub(&lease->refs, 1) != 1)
        return;
    ddb_cancel_unref(lease->ended);
    pthread_cond_destroy(&lease->idle);
    pthread_mutex_destroy(&lease->mu);
    free(lease->name);
    free(lease->value);
    free(lease);
}

/* ------------------------------------------------------------- accessors */

int ddb_lease_set_value(ddb_lease *lease, const char *value, ddb_error *err)
{
    ddb_error_clear(err);
    if (!lease)
        return ddb__fail(err, DDB_EINVAL, "The lease is NULL.");
    if (value && dl_value_check(value, err) != 0)
        return DDB_EINVAL;
    char *copy = value ? strdup(value) : NULL;
    if (value && !copy)
        return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    pthread_mutex_lock(&lease->mu);
    char *old = lease->value;
    lease->value = copy;
    pthread_mutex_unlock(&lease->mu);
    free(old);
    return 0;
}

ddb_cancel *ddb_lease_ended(ddb_lease *lease)
{
    return lease ? lease->ended : NULL;
}

int64_t ddb_lease_fencing_token(const ddb_lease *lease)
{
    return lease ? lease->fence : 0;
}

const char *ddb_lease_name(const ddb_lease *lease)
{
    return lease ? lease->name : NULL;
}

const char *ddb_lease_owner(const ddb_lease *lease)
{
    return lease ? lease->owner : NULL;
}

int64_t ddb_lease_duration_ms(const ddb_lease *lease)
{
    return lease ? lease->lease_ms : 0;
}

bool ddb_lease_takeover(const ddb_lease *lease)
{
    return lease ? lease->takeover : false;
}

ddb_lock_table *ddb_lease_lock_table(const ddb_lease *lease)
{
    return lease ? atomic_load(&((ddb_lease *)(uintptr_t)lease)->locks) : NULL;
}

ddb_loss_reason ddb_lease_loss_reason(const ddb_lease *lease)
{
    return lease ? (ddb_loss_reason)atomic_load(&((ddb_lease *)(uintptr_t)lease)->loss)
                 : DDB_LOSS_NONE;
}

/* ------------------------------------------------------------------ loss */

bool dl_lease_lose(ddb_lease *lease, ddb_loss_reason reason)
{
    pthread_mutex_lock(&lease->mu);
    if (lease->released || atomic_load(&lease->loss) != DDB_LOSS_NONE) {
        pthread_mutex_unlock(&lease->mu);
        return false;
    }
    atomic_store(&lease->loss, reason);
    pthread_mutex_unlock(&lease->mu);
    ddb_cancel_set(lease->ended);
    ddb_lock_table *l = atomic_load(&lease->locks);
    const char *table = ddb_table_name(lease->table);
    char token[24];
    snprintf(token, sizeof token, "%" PRId64, lease->fence);
    dl_log(lease->client, DDB_LOG_WARN, DDB_EVENT_LEASE_LOST,
           (const char *const[]){"lock", lease->name, "table", table, "reason",
                                 ddb_loss_reason_name(reason), "fencing_token", token,
                                 "holder", l ? l->holder_label : NULL, NULL},
           "The lease of lock \"%s\" in table \"%s\" was lost: %s.", lease->name, table,
           ddb_loss_reason_name(reason));
    dl_metric_loss(lease->client, table, reason);
    return true;
}

/* --------------------------------------------------------------- renewal */

int dl_lease_renewed(ddb_lease *lease, int rc, const char *rvn, int64_t sent_ns,
                     int64_t after_ns, bool old_exists, const ddb_error *e)
{
    /* The renewal's condition is only that the owner is still the lease's, and a
     * renewal never changes the owner: a failed condition means the lease is lost,
     * whether or not an earlier attempt whose answer was lost had been applied. */
    if (rc == DDB_EINDOUBT && dl_condition_failed(rc, e))
        rc = DDB_ECONDITION;
    if (rc == DDB_ECANCELED && ddb_cancel_is_set(lease->ended))
        return DDB_ELOST; /* released or lost while it was on its way */
    if (rc == 0) {
        pthread_mutex_lock(&lease->mu);
        bool over = lease->released || atomic_load(&lease->loss) != DDB_LOSS_NONE;
        /* The lease ran out before the answer came: lost at its deadline, whatever the
         * answer says; a late answer never revives it. */
        bool late = !over && after_ns >= lease->expiry_ns;
        if (!over && !late) {
            if (sent_ns > lease->last_sent_ns) {
                lease->last_sent_ns = sent_ns;
                lease->expiry_ns = sent_ns + lease->lease_ms * DL_NS_PER_MS;
                lease->next_attempt_ns = sent_ns + lease->lease_ms * DL_NS_PER_MS / 3;
                memcpy(lease->rvn, rvn, sizeof lease->rvn);
            }
            lease->retry_delay_ms = 0;
        }
        pthread_mutex_unlock(&lease->mu);
        if (late)
            dl_lease_lose(lease, DDB_LOSS_EXPIRED);
        return over || late ? DDB_ELOST : 0;
    }
    if (rc == DDB_ECONDITION) {
        dl_lease_lose(lease, old_exists ? DDB_LOSS_TAKEN_OVER : DDB_LOSS_DELETED);
        return DDB_ELOST;
    }
    if (rc == DDB_ENOTFOUND) {
        dl_lease_lose(lease, DDB_LOSS_TABLE_NOT_FOUND);
        return DDB_ELOST;
    }
    return ddb_cancel_is_set(lease->ended) ? DDB_ELOST : rc;
}

int ddb_lease_renew(ddb_lease *lease, bool *held, ddb_cancel *cancel, ddb_error *err)
{
    if (held)
        *held = false;
    ddb_error_clear(err);
    if (!lease)
        return ddb__fail(err, DDB_EINVAL, "The lease is NULL.");
    if (ddb_cancel_is_set(lease->ended))
        return 0;
    /* Bounded by the lease: its deadline sets `ended`, which cuts the request, its
     * retries and their backoff short. */
    ddb_cancel *bound = ddb_cancel_new_linked2(cancel, lease->ended);
    if (!bound)
        return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    const char *table = ddb_table_name(lease->table);
    char rvn[DDB__LOCK_ID_LEN + 1];
    ddb__lock_new_id(rvn);
    uint64_t parent = ddb_telemetry_get_parent();
    uint64_t span = dl_span_start(lease->client, "Lock.Renew", parent,
                                  lease->acquire_span ? &lease->acquire_span : NULL,
                                  lease->acquire_span ? 1 : 0, table, lease->name);
    ddb__span_int(ddb_client_telemetry(lease->client),
                  span, "dynalock.lock.fencing_token", lease->fence);
    uint64_t saved = ddb_telemetry_set_parent(span ? span : parent);
    ddb_error e;
    ddb_error_clear(&e);
    ddb_item *old = NULL;
    ddb__clock_hold(lease->clock);
    int64_t sent = ddb_clock_mono_ns(lease->clock);
    int rc = dl_item_renew(lease, rvn, bound, &old, &e);
    int64_t after = ddb_clock_mono_ns(lease->clock);
    ddb_telemetry_set_parent(saved);
    ddb_cancel_unref(bound);
    const char *error_type = rc ? dl_error_type(&e, rc) : NULL;
    bool lease_ended = ddb_cancel_is_set(lease->ended);
    if (!(rc == DDB_ECANCELED && lease_ended))
        dl_metric_renewal(lease->client, table, error_type);
    ddb__span_end(ddb_client_telemetry(lease->client), span, error_type);
    int out = dl_lease_renewed(lease, rc, rvn, sent, after, old != NULL, &e);
    ddb_item_free(old);
    if (out == 0) {
        dl_heartbeat_moved(lease);
        if (held)
            *held = true;
    } else if (out != DDB_ELOST) {
        if (err)
            *err = e;
        if (held)
            *held = true; /* still held until its deadline: the heartbeat goes on */
    }
    ddb__clock_unhold(lease->clock);
    return out == DDB_ELOST ? 0 : out;
}

/* --------------------------------------------------------------- release */

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

/* ------------------------------------------------------- the current lease */

/* A thread-specific key rather than a plain thread-local, so that a lease still current
 * when its thread exits is unreferenced then. */
static pthread_key_t current_key;
static pthread_once_t current_once = PTHREAD_ONCE_INIT;

static void current_dtor(void *p)
{
    ddb_lease_unref(p);
}

static void current_init(void)
{
    pthread_key_create(&current_key, current_dtor);
}

ddb_lease *ddb_lease_current(void)
{
    pthread_once(&current_once, current_init);
    return pthread_getspecific(current_key);
}

ddb_lease *ddb_lease_set_current(ddb_lease *lease)
{
    pthread_once(&current_once, current_init);
    ddb_lease *prev = pthread_getspecific(current_key);
    if (lease == prev)
        return prev;
    ddb_lease_ref(lease);
    pthread_setspecific(current_key, lease);
    ddb_lease_unref(prev);
    return prev;
}
