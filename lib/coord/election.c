/* election.c: leader election on a lock. Contends until the work ends or the caller
 * stops; runs the work for each term with the lease current on the calling thread;
 * tells the three ways a term ends apart; rides out transient errors of DynamoDB with
 * one warning per outage (44) and a note when it answers again (49). */
#include "coord_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ddb_private.h"

/* An outage of DynamoDB as the election sees it. */
typedef struct outage {
    ddb_lock_table *locks;
    const char *name;
    bool on;
    int64_t since_ns;
    int retries;
} outage;

static bool is_transient(int rc, const ddb_error *e)
{
    switch (rc) {
    case DDB_ETHROTTLED:
    case DDB_ENETWORK:
    case DDB_ETIMEDOUT:
    case DDB_ECREDENTIALS: /* credentials that are not there yet */
    case DDB_EINDOUBT:     /* an acquire that could not tell; it handed the lock back */
        return true;
    default:
        return e->http_status >= 500 && e->http_status <= 599;
    }
}

/* DynamoDB answered an acquire: an outage is over. */
static void outage_answered(void *arg)
{
    outage *o = arg;
    if (!o->on)
        return;
    o->on = false;
    ddb_lock_table *l = o->locks;
    const char *table = ddb_table_name(l->table);
    int64_t took_ms = (ddb_clock_mono_ns(l->clock) - o->since_ns) / DL_NS_PER_MS;
    char took[24], retries[24];
    snprintf(took, sizeof took, "%" PRId64, took_ms);
    snprintf(retries, sizeof retries, "%d", o->retries);
    dl_log(l->client, DDB_LOG_INFO, DDB_EVENT_ELECTION_RECOVERED,
           (const char *const[]){"lock", o->name, "table", table, "outage_ms", took,
                                 "retries", retries, "holder", l->holder_label, NULL},
           "Contending for lock \"%s\" in table \"%s\" works again: DynamoDB answered after "
           "%s ms and %s retries.",
           o->name, table, took, retries);
    o->retries = 0;
}

static void log_term_end(ddb_lock_table *l, const char *name, int64_t fence,
                         const char *reason)
{
    const char *table = ddb_table_name(l->table);
    char token[24];
    snprintf(token, sizeof token, "%" PRId64, fence);
    dl_log(l->client, DDB_LOG_INFO, DDB_EVENT_LEADING_ENDED,
           (const char *const[]){"lock", name, "table", table, "reason", reason,
                                 "fencing_token", token, "holder", l->holder_label, NULL},
           "This process no longer leads on lock \"%s\" in table \"%s\": %s.", name, table,
           reason);
}

static void log_work_threw(ddb_lock_table *l, const char *name, ddb_lock_event event_id,
                           const ddb_error *werr, int wrc, const char *after)
{
    const char *table = ddb_table_name(l->table);
    const char *type = werr->aws_type[0] ? werr->aws_type
                                         : ddb_error_name(werr->code ? werr->code : wrc);
    dl_log(l->client, DDB_LOG_DEBUG, event_id,
           (const char *const[]){"lock", name, "table", table, "error", type, "message",
                                 werr->message, "holder", l->holder_label, NULL},
           "The work of the leader of lock \"%s\" in table \"%s\" failed (%s) after %s.",
           name, table, type, after);
}

/* One pass of the election: contends until it has a lease (0, *out set), the caller
 * stops, or an error that is not transient. */
static int contend(ddb_lock_table *l, const char *name, int64_t lease_ms, ddb_cancel *stop,
                   outage *o, const dl_acquire_hooks *hooks, ddb_lease **out, ddb_error *err)
{
    const char *table = ddb_table_name(l->table);
    for (;;) {
        if (ddb_cancel_is_set(stop))
            return ddb__fail(err, DDB_ECANCELED, "The election for lock \"%s\" was cancelled.",
                             name);
        ddb_lease *lease = NULL;
        ddb_error e;
        ddb_error_clear(&e);
        int rc = dl_acquire(l, name, lease_ms, stop, false, hooks, &lease, &e);
        if (rc == 0) {
            if (ddb_cancel_is_set(lease->ended)) {
                /* Ended before its acquire answered: no term; contend again. */
                ddb_lease_release(lease);
                continue;
            }
            *out = lease;
            return 0;
        }
        if ((rc == DDB_ECANCELED && ddb_cancel_is_set(stop)) || !is_transient(rc, &e)) {
            if (err)
                *err = e;
            return rc; /* cancelled, or an error of the election */
        }
        /* The next try is timed from now, before anyone is told of this one. */
        int64_t now = ddb_clock_mono_ns(l->clock);
        const char *type = dl_error_type(&e, rc);
        dl_metric_contention_retry(l->client, table, type);
        if (!o->on) {
            o->on = true;
            o->since_ns = now;
            o->retries = 0;
            char wait[24];
            snprintf(wait, sizeof wait, "%" PRId64, dl_third_ms(lease_ms));
            dl_log(l->client, DDB_LOG_WARN, DDB_EVENT_ELECTION_OUTAGE,
                   (const char *const[]){"lock", name, "table", table, "error", type,
                                         "message", e.message, "retry_in_ms", wait, "holder",
                                         l->holder_label, NULL},
                   "An acquire of lock \"%s\" in table \"%s\" failed (%s); the election "
                   "contends again every %s ms.",
                   name, table, e.message, wait);
        }
        o->retries++;
        if (ddb__clock_wait_until(l->clock, now + dl_third_ns(lease_ms), stop) != 0)
            return ddb__fail(err, DDB_ECANCELED, "The election for lock \"%s\" was cancelled.",
                             name);
    }
}

int ddb_lock_run_as_leader(ddb_lock_table *l, const char *name, int64_t lease_ms,
                           ddb_leader_fn work, void *arg, ddb_cancel *stop, ddb_error *err)
{
    ddb_error_clear(err);
    if (!l || !work)
        return ddb__fail(err, DDB_EINVAL, "The lock table and the work are required.");
    int rc = ddb_lock_name_check(name, err);
    if (rc == 0)
        rc = dl_lease_ms_check(lease_ms, err);
    if (rc != 0)
        return rc;
    const char *table = ddb_table_name(l->table);
    outage o = {.locks = l, .name = name};
    dl_acquire_hooks hooks = {.answered = outage_answered, .arg = &o};

    for (;;) {
        ddb_lease *lease = NULL;
        /* While it contends, the thread is busy for a fake clock's settle except while it
         * waits on the clock; not while the work runs, which is the caller's own. */
        {
            DDB__HOLD_SCOPE(l->clock);
            rc = contend(l, name, lease_ms, stop, &o, &hooks, &lease, err);
        }
        if (rc != 0)
            return rc;

        /* A term. */
        char token[24];
        snprintf(token, sizeof token, "%" PRId64, lease->fence);
        dl_log(l->client, DDB_LOG_INFO, DDB_EVENT_LEADING,
               (const char *const[]){"lock", name, "table", table, "fencing_token", token,
                                     "holder", l->holder_label, NULL},
               "This process leads on lock \"%s\" in table \"%s\", with fencing token %s.",
               name, table, token);
        ddb_cancel *work_stop = ddb_cancel_new_linked2(stop, lease->ended);
        if (!work_stop) {
            ddb_lease_release(lease);
            return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
        }
        ddb_lease *outer = ddb_lease_current(); /* an enclosing term's, made current again */
        if (outer)
            ddb_lease_ref(outer);
        ddb_lease_set_current(lease);
        ddb_error werr;
        ddb_error_clear(&werr);
        int wrc = work(lease, work_stop, arg, &werr);
        ddb_lease_set_current(outer);
        ddb_lease_unref(outer);
        ddb_cancel_unref(work_stop);

        /* Which way the term ended: the caller cancelled, the lease was lost, or the
         * work returned on its own. */
        bool lost = ddb_lease_loss_reason(lease) != DDB_LOSS_NONE;
        int64_t fence = lease->fence;
        if (ddb_cancel_is_set(stop)) {
            if (wrc != 0)
                log_work_threw(l, name, DDB_EVENT_WORK_FAILED_CANCELED, &werr, wrc, "the caller cancelled");
            ddb_lease_release(lease);
            log_term_end(l, name, fence, "cancelled");
            return ddb__fail(err, DDB_ECANCELED, "The election for lock \"%s\" was cancelled.",
                             name);
        }
        if (lost) {
            if (wrc != 0)
                log_work_threw(l, name, DDB_EVENT_WORK_FAILED_LOST, &werr, wrc, "its lease was lost");
            ddb_lease_release(lease);
            log_term_end(l, name, fence, "lease_lost");
            continue;
        }
        ddb_lease_release(lease);
        if (wrc == 0) {
            log_term_end(l, name, fence, "work_returned");
            return 0;
        }
        log_term_end(l, name, fence, "work_failed");
        if (err) {
            *err = werr;
            if (err->code == 0)
                err->code = DDB_EWORK;
            if (!err->message[0])
                snprintf(err->message, sizeof err->message,
                         "The work of the leader of lock \"%s\" failed with %d.", name, wrc);
        }
        return DDB_EWORK;
    }
}
