/* heartbeat.c: a lease's renewals and background time. Three tasks on its client's
 * scheduler (lib/ddb/scheduler.c): the renewal, sent a third of the lease after the last
 * renewal that succeeded was sent, as an asynchronous request so that no lease waits for
 * another lease's; the deadline, which ends the lease with `expired` when it runs out on
 * the holder's clock, whatever is in flight; and the bound of the release sent after a
 * loss. Their callbacks run on the scheduler's thread. The caller's own renewal,
 * ddb_lease_renew, is here too; both end in lease.c's dl_lease_renewed. */
#include "coord_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_private.h"

/* A failed renewal is tried again after 100 ms, then twice as long each time, up to a
 * sixth of the lease. */
#define DL_RETRY_FIRST_MS 100

static void renew_now(void *arg);
static void deadline_now(void *arg);

/* --------------------------------------------------------- after a loss */

static void cleanup_reply(void *arg, int rc, ddb_result *res, ddb_error *err)
{
    (void)res;
    ddb_lease *lease = arg;
    bool not_ours = dl_condition_failed(rc, err);
    if (rc != 0 && !not_ours && rc != DDB_ECANCELED) {
        const char *table = ddb_table_name(lease->table);
        dl_log(lease->client, DDB_LOG_DEBUG, DDB_EVENT_NONE,
               (const char *const[]){"lock", lease->name, "table", table, "error",
                                     dl_error_type(err, rc), NULL},
               "The release of lock \"%s\" after its lease ran out failed (%s).",
               lease->name, err->message);
    }
    ddb__sched_cancel(lease->sched, &lease->cleanup_stop_task);
    pthread_mutex_lock(&lease->mu);
    lease->cleaning = false;
    /* Done with, unless it failed: the holder's own release then tries again. */
    lease->cleaned = rc == 0 || not_ours;
    ddb_cancel *stop = lease->cleanup_stop;
    lease->cleanup_stop = NULL;
    pthread_cond_broadcast(&lease->idle);
    pthread_mutex_unlock(&lease->mu);
    ddb_cancel_unref(stop);
}

static void cleanup_bound(void *arg)
{
    ddb_lease *lease = arg;
    pthread_mutex_lock(&lease->mu);
    ddb_cancel *stop = lease->cleanup_stop ? ddb_cancel_ref(lease->cleanup_stop) : NULL;
    pthread_mutex_unlock(&lease->mu);
    ddb_cancel_set(stop);
    ddb_cancel_unref(stop);
}

/* A lease that ran out may still be named by its item (a renewal that DynamoDB applied
 * while its answer was on its way): a conditional release, best-effort and bounded by a
 * third of the lease, frees the lock for contenders sooner; it leaves a lock that
 * another holder took alone. */
static void cleanup_start(ddb_lease *lease)
{
    ddb_cancel *stop = ddb_cancel_new();
    if (!stop)
        return;
    pthread_mutex_lock(&lease->mu);
    if (lease->cleaning || lease->cleaned || lease->released) {
        pthread_mutex_unlock(&lease->mu);
        ddb_cancel_unref(stop);
        return;
    }
    lease->cleaning = true;
    lease->cleanup_stop = stop;
    pthread_mutex_unlock(&lease->mu);
    ddb_error e;
    ddb_error_clear(&e);
    int rc = dl_item_release_start(lease, stop, cleanup_reply, lease, &e);
    if (rc != 0) {
        pthread_mutex_lock(&lease->mu);
        lease->cleaning = false;
        lease->cleanup_stop = NULL;
        pthread_cond_broadcast(&lease->idle);
        pthread_mutex_unlock(&lease->mu);
        ddb_cancel_unref(stop);
        return;
    }
    int64_t bound = ddb_clock_mono_ns(lease->clock) + dl_third_ns(lease->lease_ms);
    if (ddb__sched_at(lease->sched, &lease->cleanup_stop_task, bound) != 0)
        cleanup_bound(lease); /* no memory to bound it: give it up at once */
}

/* ------------------------------------------------------------ renewal */

static void log_retry(ddb_lease *lease, int rc, const ddb_error *e, int64_t delay_ms,
                      int64_t left_ms)
{
    ddb_lock_table *l = atomic_load(&lease->locks);
    const char *table = ddb_table_name(lease->table);
    char wait[24], left[24];
    snprintf(wait, sizeof wait, "%" PRId64, delay_ms);
    snprintf(left, sizeof left, "%" PRId64, left_ms);
    dl_log(lease->client, DDB_LOG_WARN, DDB_EVENT_RENEWAL_FAILED,
           (const char *const[]){"lock", lease->name, "table", table, "error",
                                 dl_error_type(e, rc), "message", e->message, "retry_in_ms",
                                 wait, "lease_left_ms", left, "holder",
                                 l ? l->holder_label : NULL, NULL},
           "A renewal of lock \"%s\" in table \"%s\" failed (%s); it is tried again in %s "
           "ms, until the lease runs out in %s ms.",
           lease->name, table, e->message, wait, left);
}

static void renew_reply(void *arg, int rc, ddb_result *res, ddb_error *err)
{
    ddb_lease *lease = arg;
    int64_t after = ddb_clock_mono_ns(lease->clock);
    pthread_mutex_lock(&lease->mu);
    int64_t sent = lease->renew_sent_ns;
    char rvn[DDB__LOCK_ID_LEN + 1];
    memcpy(rvn, lease->renew_rvn, sizeof rvn);
    uint64_t span = lease->renew_span;
    pthread_mutex_unlock(&lease->mu);

    const char *error_type = rc ? dl_error_type(err, rc) : NULL;
    bool ended = ddb_cancel_is_set(lease->ended);
    if (!(rc == DDB_ECANCELED && ended))
        dl_metric_renewal(lease->client, ddb_table_name(lease->table), error_type);
    ddb__span_end(ddb_client_telemetry(lease->client), span, error_type);

    int out = dl_lease_renewed(lease, rc, rvn, sent, after, res && res->item, err);
    if (out == 0) {
        pthread_mutex_lock(&lease->mu);
        int64_t next = lease->next_attempt_ns, expiry = lease->expiry_ns;
        pthread_mutex_unlock(&lease->mu);
        ddb__sched_at(lease->sched, &lease->renew_task, next);
        ddb__sched_at(lease->sched, &lease->deadline_task, expiry);
    } else if (out != DDB_ELOST && !ddb_cancel_is_set(lease->ended)) {
        /* Tried again after a wait, until one succeeds or the lease runs out (the
         * deadline task ends it then). */
        pthread_mutex_lock(&lease->mu);
        int64_t cap_ms = lease->lease_ms / 6;
        int64_t delay_ms = lease->retry_delay_ms ? lease->retry_delay_ms * 2 : DL_RETRY_FIRST_MS;
        if (delay_ms > cap_ms)
            delay_ms = cap_ms;
        lease->retry_delay_ms = delay_ms;
        lease->next_attempt_ns = after + delay_ms * DL_NS_PER_MS;
        int64_t left_ms = (lease->expiry_ns - after) / DL_NS_PER_MS;
        int64_t next = lease->next_attempt_ns;
        pthread_mutex_unlock(&lease->mu);
        log_retry(lease, rc, err, delay_ms, left_ms);
        ddb__sched_at(lease->sched, &lease->renew_task, next);
    } else if (out == DDB_ELOST && ddb_lease_loss_reason(lease) == DDB_LOSS_EXPIRED) {
        /* A success that came too late: the item may name this lease. */
        cleanup_start(lease);
    }
    pthread_mutex_lock(&lease->mu);
    lease->renewing = false;
    pthread_cond_broadcast(&lease->idle);
    pthread_mutex_unlock(&lease->mu);
}

static void renew_now(void *arg)
{
    ddb_lease *lease = arg;
    if (ddb_cancel_is_set(lease->ended))
        return;
    int64_t now = ddb_clock_mono_ns(lease->clock);
    pthread_mutex_lock(&lease->mu);
    if (lease->released || lease->renewing) {
        pthread_mutex_unlock(&lease->mu);
        return;
    }
    if (now < lease->next_attempt_ns) {
        /* Moved by a ddb_lease_renew since it was queued. */
        int64_t next = lease->next_attempt_ns;
        pthread_mutex_unlock(&lease->mu);
        ddb__sched_at(lease->sched, &lease->renew_task, next);
        return;
    }
    lease->renewing = true;
    lease->renew_sent_ns = now;
    ddb__lock_new_id(lease->renew_rvn);
    char rvn[DDB__LOCK_ID_LEN + 1];
    memcpy(rvn, lease->renew_rvn, sizeof rvn);
    pthread_mutex_unlock(&lease->mu);

    /* Each renewal of the heartbeat is the root of a trace, linked to the acquire. */
    const char *table = ddb_table_name(lease->table);
    uint64_t span = dl_span_start(lease->client, "Lock.Renew", 0,
                                  lease->acquire_span ? &lease->acquire_span : NULL,
                                  lease->acquire_span ? 1 : 0, table, lease->name);
    ddb__span_int(ddb_client_telemetry(lease->client),
                  span, "dynalock.lock.fencing_token", lease->fence);
    pthread_mutex_lock(&lease->mu);
    lease->renew_span = span;
    pthread_mutex_unlock(&lease->mu);
    uint64_t saved = ddb_telemetry_set_parent(span);
    ddb_error e;
    ddb_error_clear(&e);
    /* Bounded by the lease: its deadline sets `ended`, which aborts the request, its
     * retries and their backoff. */
    int rc = dl_item_renew_start(lease, rvn, lease->ended, renew_reply, lease, &e);
    ddb_telemetry_set_parent(saved);
    if (rc != 0)
        renew_reply(lease, rc, NULL, &e);
}

/* ------------------------------------------------------------ deadline */

static void deadline_now(void *arg)
{
    ddb_lease *lease = arg;
    int64_t now = ddb_clock_mono_ns(lease->clock);
    pthread_mutex_lock(&lease->mu);
    int64_t expiry = lease->expiry_ns;
    pthread_mutex_unlock(&lease->mu);
    if (now < expiry) {
        ddb__sched_at(lease->sched, &lease->deadline_task, expiry); /* renewed meanwhile */
        return;
    }
    /* Lost at this instant: `ended` is set, which aborts a renewal in flight; its answer,
     * should it come, is not acted on. */
    if (dl_lease_lose(lease, DDB_LOSS_EXPIRED))
        cleanup_start(lease);
}

/* ------------------------------------------------------- start and stop */

int dl_heartbeat_start(ddb_lease *lease, ddb_error *err)
{
    ddb__sched *s = ddb__client_sched(lease->client, err);
    if (!s)
        return err ? err->code : DDB_ENOMEM;
    pthread_mutex_lock(&lease->mu);
    lease->sched = s;
    lease->renew_task = (ddb__task){ .fn = renew_now, .arg = lease };
    lease->deadline_task = (ddb__task){ .fn = deadline_now, .arg = lease };
    lease->cleanup_stop_task = (ddb__task){ .fn = cleanup_bound, .arg = lease };
    int64_t next = lease->next_attempt_ns, expiry = lease->expiry_ns;
    lease->beating = true;
    pthread_mutex_unlock(&lease->mu);
    atomic_fetch_add(&lease->refs, 1); /* the heartbeat's, until it stops */
    if (ddb__sched_at(s, &lease->deadline_task, expiry) != 0 ||
        ddb__sched_at(s, &lease->renew_task, next) != 0) {
        dl_heartbeat_stop(lease);
        return ddb__fail(err, DDB_ENOMEM, "Could not start the heartbeat of lock \"%s\".",
                         lease->name);
    }
    return 0;
}

void dl_heartbeat_stop(ddb_lease *lease)
{
    pthread_mutex_lock(&lease->mu);
    bool beating = lease->beating;
    lease->beating = false;
    pthread_mutex_unlock(&lease->mu);
    if (!beating)
        return;
    /* `ended` is set by now, so a renewal in flight is on its way to being aborted; once
     * the tasks are off the queue (a run that has begun is waited for), no new request
     * starts: the release after a loss checks `released`, set before this. */
    ddb__sched_cancel(lease->sched, &lease->renew_task);
    ddb__sched_cancel(lease->sched, &lease->deadline_task);
    pthread_mutex_lock(&lease->mu);
    ddb_cancel *stop = lease->cleanup_stop ? ddb_cancel_ref(lease->cleanup_stop) : NULL;
    pthread_mutex_unlock(&lease->mu);
    ddb_cancel_set(stop);
    ddb_cancel_unref(stop);
    pthread_mutex_lock(&lease->mu);
    while (lease->renewing || lease->cleaning)
        pthread_cond_wait(&lease->idle, &lease->mu);
    pthread_mutex_unlock(&lease->mu);
    /* A reply may have queued a task again before it finished. */
    ddb__sched_cancel(lease->sched, &lease->renew_task);
    ddb__sched_cancel(lease->sched, &lease->deadline_task);
    ddb__sched_cancel(lease->sched, &lease->cleanup_stop_task);
    ddb_lease_unref(lease);
}

void dl_heartbeat_moved(ddb_lease *lease)
{
    pthread_mutex_lock(&lease->mu);
    bool beating = lease->beating;
    int64_t next = lease->next_attempt_ns, expiry = lease->expiry_ns;
    pthread_mutex_unlock(&lease->mu);
    if (!beating)
        return;
    ddb__sched_at(lease->sched, &lease->renew_task, next);
    ddb__sched_at(lease->sched, &lease->deadline_task, expiry);
}

/* ------------------------------------------------- the caller's renewal */

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
    DDB__HOLD_SCOPE(lease->clock);
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
    return out == DDB_ELOST ? 0 : out;
}
