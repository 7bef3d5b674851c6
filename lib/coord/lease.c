/* lease.c: a lease on a lock -- its state (expiry on the monotonic clock, loss reason,
 * the ended token), what a renewal's outcome does to it, and the lease that is current
 * on a thread (the C form of the reference's Lease.Current). The renewal itself is
 * heartbeat.c's, the end and release release.c's. */
#include "coord_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_private.h"
#include "dl_assert.h"

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
    DL_ASSERT(lease_ms > 0);
    lease->last_sent_ns = sent_ns;
    lease->expiry_ns = sent_ns + lease_ms * DL_NS_PER_MS;
    lease->next_attempt_ns = sent_ns + dl_third_ns(lease_ms);
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
                lease->next_attempt_ns = sent_ns + dl_third_ns(lease->lease_ms);
                memcpy(lease->rvn, rvn, sizeof lease->rvn);
            }
            /* The lease's times only move forward, and the next renewal is due before
             * the lease runs out. */
            DL_ASSERT(lease->last_sent_ns < lease->next_attempt_ns &&
                      lease->next_attempt_ns < lease->expiry_ns);
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
