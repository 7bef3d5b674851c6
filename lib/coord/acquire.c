/* acquire.c: taking a lock -- try once, or wait and poll. A lock table that has not
 * seen the lock held writes at once; once it has, each poll is one strongly consistent
 * read, and it writes again only when it reads the lock free or the holder is due for a
 * takeover, measured on this client's monotonic clock from when it first read that
 * record version. A slot of N (ddb_lock_acquire_slot) is a try of each slot's lock in turn,
 * waiting for the earliest poll of the slots when all are held. */
#include "coord_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_private.h"

/* Polls come every third of the holder's lease, at most 10 s apart. */
#define DL_POLL_MAX_MS 10000LL

typedef struct acq {
    ddb_lock_table *locks;
    const char *name;
    int64_t lease_ms;
    ddb_cancel *stop;
    const dl_acquire_hooks *hooks;
    uint64_t span;
    char owner[DDB__LOCK_ID_LEN + 1];
    dl_seen_entry seen;     /* the holder seen, when have_seen */
    bool have_seen;
} acq;

static void answered(acq *a)
{
    if (a->hooks && a->hooks->answered)
        a->hooks->answered(a->hooks->arg);
}

/* Builds the lease after a write that took the lock (or found it taken by this very
 * acquire, when the client retried a write whose answer was lost). */
static int make_lease(acq *a, const char *rvn, int64_t fence, bool takeover,
                      const char *previous_holder, int64_t sent_ns, ddb_lease **out,
                      ddb_error *err)
{
    ddb_lock_table *l = a->locks;
    const char *table = ddb_table_name(l->table);
    ddb_lease *lease = dl_lease_new(l, a->name, a->owner, rvn, a->lease_ms, fence, takeover,
                                    sent_ns, a->span);
    if (!lease)
        return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    dl_seen_forget(l, a->name);
    dl_table_add_lease(l, lease);
    dl_metric_acquisition(l->client, table, takeover);
    if (takeover) {
        char token[24];
        snprintf(token, sizeof token, "%" PRId64, fence);
        dl_log(l->client, DDB_LOG_INFO, DDB_EVENT_LOCK_TAKEN_OVER,
               (const char *const[]){"lock", a->name, "table", table, "fencing_token", token,
                                     "previous_holder", previous_holder, "holder",
                                     l->holder_label, NULL},
               "Lock \"%s\" in table \"%s\" was taken over from %s%s%s, which stopped "
               "renewing it; holder %s%s%s, fencing token %s.",
               a->name, table, previous_holder ? "holder \"" : "a holder without a label",
               previous_holder ? previous_holder : "", previous_holder ? "\"" : "",
               l->holder_label ? "\"" : "", l->holder_label ? l->holder_label : "(no label)",
               l->holder_label ? "\"" : "", token);
    }
    int64_t now = ddb_clock_mono_ns(l->clock);
    if (now >= lease->expiry_ns) {
        /* The answer came after a whole lease: the lease has ended already. */
        dl_lease_lose(lease, DDB_LOSS_EXPIRED);
    } else {
        ddb_error e;
        ddb_error_clear(&e);
        if (dl_heartbeat_start(lease, &e) != 0) {
            dl_lease_lose(lease, DDB_LOSS_EXPIRED);
            ddb_lease_release(lease);
            if (err)
                *err = e;
            return e.code;
        }
    }
    *out = lease;
    return 0;
}

/* How long to wait before the next poll, from now. */
static int64_t poll_wait_ns(const acq *a, int64_t now)
{
    int64_t lease_ns = a->seen.lease_ms * DL_NS_PER_MS;
    int64_t wait = dl_third_ns(a->seen.lease_ms);
    if (wait > DL_POLL_MAX_MS * DL_NS_PER_MS)
        wait = DL_POLL_MAX_MS * DL_NS_PER_MS;
    int64_t left = a->seen.first_seen_ns + lease_ns - now;
    if (left < wait)
        wait = left;
    return wait > 0 ? wait : 0;
}

static bool due(const acq *a, int64_t now)
{
    return now - a->seen.first_seen_ns >= a->seen.lease_ms * DL_NS_PER_MS;
}

static int remember(acq *a, const ddb__lock_item *li, int64_t now, ddb_error *err)
{
    dl_seen_entry_cleanup(&a->seen);
    a->have_seen = false;
    if (dl_seen_put(a->locks, a->name, li, now, &a->seen) != 0)
        return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    a->have_seen = true;
    return 0;
}

static void forget(acq *a)
{
    dl_seen_forget(a->locks, a->name);
    dl_seen_entry_cleanup(&a->seen);
    a->have_seen = false;
}

/* The bound of a hand-back started in the background: its token, cancelled a third of a
 * lease after the start, and freed with the answer. */
static void hand_back_done(void *arg, int rc, ddb_result *res, ddb_error *err)
{
    (void)rc;
    (void)res;
    (void)err;
    ddb_cancel_unref(arg);
}

/* Gives back what an acquire that ends without knowing its outcome may hold: a release on
 * condition of this acquire's owner id, bounded by a third of the lease. An acquire that
 * ran its course waits for it and says in err's message what it did. One that its caller
 * stopped (a signal, a deadline) does not hold the caller up: the release goes on in the
 * background, on the client's scheduler, within the same bound. */
static void hand_back(acq *a, bool stopped, ddb_error *err)
{
    ddb_lock_table *l = a->locks;
    ddb_cancel *bound = ddb_cancel_new();
    if (bound && ddb_cancel_after(bound, l->clock, dl_third_ms(a->lease_ms)) != 0) {
        ddb_cancel_unref(bound);
        bound = NULL;
    }
    ddb_error e;
    ddb_error_clear(&e);
    if (stopped) {
        if (bound && dl_item_release_owner(l, a->name, a->owner, bound, hand_back_done, bound,
                                           &e) != 0)
            ddb_cancel_unref(bound);
        if (err && bound) {
            size_t n = strlen(err->message);
            snprintf(err->message + n, sizeof err->message - n,
                     " A release on condition of this acquire's owner id was started, in case "
                     "its write had been applied.");
        }
        return;
    }
    int rc = bound ? dl_item_release_owner(l, a->name, a->owner, bound, NULL, NULL, &e)
                   : ddb__fail(&e, DDB_ENOMEM, "Out of memory.");
    ddb_cancel_unref(bound);
    if (!err)
        return;
    const char *said = rc == 0 ? "it had been applied, and the lock is free again"
                       : dl_condition_failed(rc, &e) ? "the lock was not this acquire's"
                                                      : NULL;
    size_t n = strlen(err->message);
    if (said)
        snprintf(err->message + n, sizeof err->message - n,
                 " A release on condition of this acquire's owner id was sent: %s.", said);
    else
        snprintf(err->message + n, sizeof err->message - n,
                 " A release on condition of this acquire's owner id failed too (%s): if the "
                 "acquire was applied, the lock is free once its lease of %" PRId64
                 " ms runs out.",
                 e.message, a->lease_ms);
}

/* The acquire's write lost its answer on every attempt: the item says whether it was
 * applied (this acquire's owner id there), and if the read fails too the outcome stays in
 * doubt and what the acquire may hold is handed back. Returns as try_write does. */
static int resolve_write(acq *a, bool replacing, int64_t sent, ddb_lease **out,
                         ddb_error *err)
{
    ddb_lock_table *l = a->locks;
    ddb__lock_item li = {0};
    ddb_error rerr;
    ddb_error_clear(&rerr);
    int rc = dl_item_resolve(l, a->name, a->stop, &li, &rerr);
    if (rc != 0) {
        ddb__lock_item_cleanup(&li);
        char lost[161];
        snprintf(lost, sizeof lost, "%.160s", err ? err->message : "");
        ddb__fail(err, DDB_EINDOUBT,
                  "The acquire of lock \"%s\" in table \"%s\" is in doubt: its answer was "
                  "lost (%s) and the read that would tell failed too (%.120s).",
                  a->name, ddb_table_name(l->table), lost, rerr.message);
        hand_back(a, false, err);
        return DDB_EINDOUBT;
    }
    answered(a);
    ddb_error_clear(err);
    if (li.held && strcmp(li.owner, a->owner) == 0) {
        /* Applied: the lease is the one that write took, from when it was sent. */
        rc = make_lease(a, li.rvn, li.fence, replacing, NULL, sent, out, err);
    } else if (!li.held) {
        forget(a);
        rc = 2; /* not applied, and free now: read again */
    } else {
        rc = remember(a, &li, ddb_clock_mono_ns(l->clock), err);
        rc = rc ? rc : 1;
    }
    ddb__lock_item_cleanup(&li);
    return rc;
}

/* One write. 0 with *out set: the lease. 1: refused (the holder is remembered). Else an
 * error. */
static int try_write(acq *a, ddb_lease **out, ddb_error *err)
{
    ddb_lock_table *l = a->locks;
    char rvn[DDB__LOCK_ID_LEN + 1];
    ddb__lock_new_id(rvn);
    ddb_item *old = NULL;
    bool replacing = a->have_seen;
    int64_t sent = ddb_clock_mono_ns(l->clock);
    int rc = dl_item_acquire(l, a->name, a->owner, rvn, a->lease_ms,
                             a->have_seen ? &a->seen : NULL, a->stop, &old, err);
    int64_t after = ddb_clock_mono_ns(l->clock);
    if (rc == DDB_EINDOUBT && !old)
        return resolve_write(a, replacing, sent, out, err);
    if (rc == DDB_ECANCELED) {
        hand_back(a, true, err);
        return rc;
    }
    if (rc != 0 && !dl_condition_failed(rc, err)) {
        ddb_item_free(old);
        return rc;
    }
    if (rc == DDB_EINDOUBT)
        rc = DDB_ECONDITION; /* the last attempt's failed condition, with the item */
    answered(a);
    ddb__lock_item li;
    ddb_error perr;
    ddb_error_clear(&perr);
    int prc = ddb__lock_item_parse(l, a->name, old, &li, &perr);
    if (rc == 0) {
        /* old is the item before the write: an owner there means a takeover. */
        int64_t fence = 1;
        bool takeover = false;
        char *previous = NULL;
        if (prc == 0) {
            fence = li.fence + 1;
            takeover = li.held;
            previous = li.holder;
        } else {
            int64_t f = 0;
            if (old && ddb_item_get_i64(old, DDB__LOCK_ATTR_FENCE, &f) == 0)
                fence = f + 1;
            takeover = replacing;
        }
        rc = make_lease(a, rvn, fence, takeover, previous, sent, out, err);
        if (prc == 0)
            ddb__lock_item_cleanup(&li);
        ddb_item_free(old);
        return rc;
    }
    /* The condition failed: old is the item as it is. */
    ddb_item_free(old);
    if (prc != 0) {
        if (err)
            *err = perr;
        return prc;
    }
    if (li.held && strcmp(li.owner, a->owner) == 0) {
        /* The client retried a write whose answer was lost, and the first attempt took
         * the lock: the lease is the one that attempt took, from when it was sent. */
        rc = make_lease(a, li.rvn, li.fence, replacing, NULL, sent, out, err);
        ddb__lock_item_cleanup(&li);
        return rc;
    }
    if (!li.held) {
        /* Freed between the condition and the answer: nothing to remember. */
        ddb__lock_item_cleanup(&li);
        forget(a);
        return 2;
    }
    rc = remember(a, &li, after, err);
    ddb__lock_item_cleanup(&li);
    return rc ? rc : 1;
}

int dl_acquire(ddb_lock_table *l, const char *name, int64_t lease_ms, ddb_cancel *stop,
               bool once, const dl_acquire_hooks *hooks, ddb_lease **out, ddb_error *err)
{
    if (out)
        *out = NULL;
    ddb_error_clear(err);
    if (!l || !out)
        return ddb__fail(err, DDB_EINVAL, "The lock table and the lease pointer are required.");
    int rc = ddb_lock_name_check(name, err);
    if (rc == 0 && !(hooks && hooks->slot) && ddb_lock_slot_parse(name, NULL, NULL))
        rc = ddb__fail(err, DDB_EINVAL,
                       "The lock name \"%s\" is a slot's (NAME" DDB_LOCK_SLOT_SUFFIX "K): "
                       "slots are taken with ddb_lock_acquire_slot.", name);
    if (rc == 0)
        rc = dl_lease_ms_check(lease_ms, err);
    if (rc != 0)
        return rc;

    ddb_client *client = l->client;
    const char *table = ddb_table_name(l->table);
    uint64_t parent = ddb_telemetry_get_parent();
    acq a = {.locks = l, .name = name, .lease_ms = lease_ms, .stop = stop, .hooks = hooks};
    a.span = dl_span_start(client, once ? "Lock.TryAcquire" : "Lock.Acquire", parent, NULL, 0,
                           table, name);
    uint64_t saved = ddb_telemetry_set_parent(a.span ? a.span : parent);
    ddb__lock_new_id(a.owner);
    a.have_seen = dl_seen_get(l, name, &a.seen);
    bool must_read = a.have_seen;
    int races = 0;
    /* The thread stays busy for a fake clock's settle across the requests of a poll,
     * until it waits for the next poll or returns. */
    DDB__HOLD_SCOPE(l->clock);
    ddb_error e;
    ddb_error_clear(&e);

    for (;;) {
        if (ddb_cancel_is_set(stop)) {
            rc = ddb__fail(&e, DDB_ECANCELED, "The acquire of lock \"%s\" was cancelled.",
                           name);
            break;
        }
        bool write = !must_read;
        if (must_read) {
            ddb_item *item = NULL;
            rc = dl_item_read(l, name, stop, &item, &e);
            if (rc != 0)
                break;
            answered(&a);
            int64_t now = ddb_clock_mono_ns(l->clock);
            ddb__lock_item li;
            rc = ddb__lock_item_parse(l, name, item, &li, &e);
            ddb_item_free(item);
            if (rc != 0)
                break;
            if (!li.held) {
                forget(&a);
                write = true;
            } else {
                rc = remember(&a, &li, now, &e);
                if (rc == 0 && due(&a, now))
                    write = true;
            }
            ddb__lock_item_cleanup(&li);
            if (rc != 0)
                break;
        }
        if (write) {
            rc = try_write(&a, out, &e);
            if (rc == 0 || rc < 0)
                break;
            if (rc == 2) {
                /* A race with a release; read again, and after a few, wait a poll. */
                rc = 0;
                if (++races < 3) {
                    must_read = true;
                    continue;
                }
            }
        }
        races = 0;
        /* Refused: the lock is held by another, not yet due for a takeover. The next
         * poll is timed from now, before anyone is told of the refusal, so a clock that
         * moves after the telling moves the poll too. */
        int64_t now = ddb_clock_mono_ns(l->clock);
        int64_t wait = a.have_seen ? poll_wait_ns(&a, now) : DL_POLL_MAX_MS * DL_NS_PER_MS / 100;
        dl_refused(l, name);
        if (once) {
            if (hooks && hooks->next_poll_ns)
                *hooks->next_poll_ns = now + wait;
            rc = 0;
            break;
        }
        rc = ddb__clock_wait_until(l->clock, now + wait, stop);
        if (rc != 0) {
            rc = ddb__fail(&e, DDB_ECANCELED, "The acquire of lock \"%s\" was cancelled.",
                           name);
            break;
        }
        must_read = true;
    }
    ddb_telemetry_set_parent(saved);
    dl_seen_entry_cleanup(&a.seen);

    if (rc == 0) {
        ddb__span_bool(ddb_client_telemetry(client),
                       a.span, "dynalock.lock.acquired", *out != NULL);
        if (*out) {
            ddb__span_bool(ddb_client_telemetry(client),
                           a.span, "dynalock.lock.takeover", (*out)->takeover);
            ddb__span_int(ddb_client_telemetry(client),
                          a.span, "dynalock.lock.fencing_token", (*out)->fence);
        }
        ddb__span_end(ddb_client_telemetry(client), a.span, NULL);
    } else {
        ddb__span_bool(ddb_client_telemetry(client), a.span, "dynalock.lock.acquired", false);
        ddb__span_end(ddb_client_telemetry(client), a.span, dl_error_type(&e, rc));
        if (err)
            *err = e;
    }
    return rc;
}

int ddb_lock_try_acquire(ddb_lock_table *locks, const char *name, int64_t lease_ms,
                         ddb_lease **out, ddb_cancel *cancel, ddb_error *err)
{
    return dl_acquire(locks, name, lease_ms, cancel, true, NULL, out, err);
}

int ddb_lock_acquire(ddb_lock_table *locks, const char *name, int64_t lease_ms,
                     ddb_lease **out, ddb_cancel *stop, ddb_error *err)
{
    return dl_acquire(locks, name, lease_ms, stop, false, NULL, out, err);
}

/* ------------------------------------------------------------------ slots */

bool ddb_lock_slot_parse(const char *lock_name, size_t *base_len, int *slot)
{
    if (!lock_name)
        return false;
    size_t len = strlen(lock_name), digits = 0;
    while (digits < len && lock_name[len - 1 - digits] >= '0' &&
           lock_name[len - 1 - digits] <= '9')
        digits++;
    size_t suffix = strlen(DDB_LOCK_SLOT_SUFFIX);
    if (digits < 1 || digits > 9 || len < digits + suffix + 1)
        return false;
    const char *d = lock_name + len - digits;
    if (digits > 1 && d[0] == '0')
        return false;
    if (memcmp(d - suffix, DDB_LOCK_SLOT_SUFFIX, suffix) != 0)
        return false;
    if (base_len)
        *base_len = len - digits - suffix;
    if (slot)
        *slot = (int)strtol(d, NULL, 10);
    return true;
}

int ddb_lock_slot_name(const char *name, int slot, char *buf, size_t size, ddb_error *err)
{
    ddb_error_clear(err);
    int rc = ddb_lock_name_check(name, err);
    if (rc != 0)
        return rc;
    if (slot < 0 || slot >= DDB_LOCK_SLOTS_MAX)
        return ddb__fail(err, DDB_EINVAL, "Slot %d of lock \"%s\" is out of range (0 to %d).",
                         slot, name, DDB_LOCK_SLOTS_MAX - 1);
    char full[DDB_LOCK_NAME_SIZE + 16];
    int n = snprintf(full, sizeof full, "%.*s" DDB_LOCK_SLOT_SUFFIX "%d",
                     DDB_LOCK_NAME_SIZE, name, slot);
    if (n < 0 || (size_t)n > DDB__LOCK_NAME_MAX)
        return ddb__fail(err, DDB_EINVAL,
                         "The lock name \"%s\" is too long for slots: a slot's name (\"%s"
                         DDB_LOCK_SLOT_SUFFIX "%d\") has at most %d bytes.",
                         name, name, slot, DDB__LOCK_NAME_MAX);
    if (!buf || size <= (size_t)n)
        return ddb__fail(err, DDB_EINVAL, "The buffer for the name of slot %d of lock \"%s\" "
                         "is too small.", slot, name);
    memcpy(buf, full, (size_t)n + 1);
    return 0;
}

/* A start that spreads contenders: a random slot (from the id generator's randomness). */
static int random_slot(int slots)
{
    char id[DDB__LOCK_ID_LEN + 1];
    ddb__lock_new_id(id);
    unsigned long r = strtoul((char[9]){id[0], id[1], id[2], id[3], id[4], id[5], id[6],
                                        id[7], '\0'}, NULL, 16);
    return (int)(r % (unsigned long)slots);
}

int ddb_lock_acquire_slot(ddb_lock_table *locks, const char *name, int slots,
                          int64_t lease_ms, const ddb_lock_slot_options *o, ddb_lease **out,
                          int *slot, ddb_cancel *stop, ddb_error *err)
{
    if (out)
        *out = NULL;
    if (slot)
        *slot = -1;
    ddb_error_clear(err);
    if (!locks || !out)
        return ddb__fail(err, DDB_EINVAL, "The lock table and the lease pointer are required.");
    if (slots < 1 || slots > DDB_LOCK_SLOTS_MAX)
        return ddb__fail(err, DDB_EINVAL,
                         "The number of slots of lock \"%s\" is %d; it must be from 1 to %d.",
                         name ? name : "(null)", slots, DDB_LOCK_SLOTS_MAX);
    char slot_name[DDB_LOCK_NAME_SIZE];
    /* The last slot's name is the longest: if it is a lock name, all are. */
    int rc = ddb_lock_slot_name(name, slots - 1, slot_name, sizeof slot_name, err);
    if (rc == 0)
        rc = dl_lease_ms_check(lease_ms, err);
    if (rc != 0)
        return rc;
    bool no_wait = o && o->no_wait;
    int start = random_slot(slots);
    /* Busy for a fake clock's settle from one slot's try to the next. */
    DDB__HOLD_SCOPE(locks->clock);
    for (;;) {
        int64_t next = INT64_MAX;
        for (int i = 0; i < slots; i++) {
            int k = (start + i) % slots;
            rc = ddb_lock_slot_name(name, k, slot_name, sizeof slot_name, err);
            int64_t poll = INT64_MAX;
            dl_acquire_hooks h = {.slot = true, .next_poll_ns = &poll};
            if (rc == 0)
                rc = dl_acquire(locks, slot_name, lease_ms, stop, true, &h, out, err);
            if (rc != 0 || *out) {
                if (rc == 0 && slot)
                    *slot = k;
                goto done;
            }
            if (poll < next)
                next = poll;
        }
        if (no_wait)
            goto done;
        if (ddb__clock_wait_until(locks->clock, next, stop) != 0) {
            rc = ddb__fail(err, DDB_ECANCELED,
                           "The acquire of a slot of lock \"%s\" (%d slots) was cancelled.",
                           name, slots);
            goto done;
        }
    }
done:
    return rc;
}
