/* coord.h: the lock layer of libddb, leases on named locks with fencing tokens, and leader
 * election, on a DynamoDB table (see docs/coordination.md).
 *
 * The ownership, error and thread rules of ddb.h hold here. A lease's heartbeat runs on
 * the client's scheduler thread; every other callback runs on the thread that called.
 */
#ifndef DYNALOCK_COORD_H
#define DYNALOCK_COORD_H

#include <dynalock/ddb.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bounds of a lease's duration. */
#define DDB_LEASE_MIN_MS 1000LL
#define DDB_LEASE_MAX_MS 86400000LL
/* Time-to-live retention: at least a day, 30 days by default. */
#define DDB_LOCK_TTL_RETENTION_MIN_MS 86400000LL
#define DDB_LOCK_TTL_RETENTION_DEFAULT_MS (30LL * 86400000LL)
#define DDB_HOLDER_LABEL_MAX 256
/* A lease's value: at most this many bytes of UTF-8. */
#define DDB_LEASE_VALUE_MAX_BYTES 1024
/* The attribute that only lock items have with the value "LOCK": the partition key of a
 * lock table's list index (ddb_lock_table_options.list_index). */
#define DDB_LOCK_INDEX_KEY "_type"

typedef struct ddb_lock_table ddb_lock_table;
typedef struct ddb_lease ddb_lease;

typedef struct ddb_lock_table_options {
    const char *holder_label;      /* 1..256 characters, written as `holder`; NULL none */
    const char *ttl_attribute;     /* written on every write of a lock; NULL none */
    int64_t ttl_retention_ms;      /* 0 = 30 days; at least one day */
    /* A global secondary index whose partition key is DDB_LOCK_INDEX_KEY (a string),
     * projecting all attributes: ddb_lock_table_list queries it, reading the lock items
     * only, instead of scanning the whole table. NULL: lists scan. */
    const char *list_index;
    /* A value the leases of this lock table carry (e.g. the address where the leader
     * can be reached): 1..DDB_LEASE_VALUE_MAX_BYTES bytes of UTF-8, written with every
     * acquire and renewal, removed on release, shown by reads; never part of a condition.
     * NULL: none (an acquire removes the value a previous holder left). A lease can
     * change its own with ddb_lease_set_value. */
    const char *lease_value;
} ddb_lock_table_options;

/* A lock table over `table`, whose key attributes must be strings. Takes the clock,
 * logger, retries and telemetry of the table's client. No I/O. Hold one per table per
 * process: it remembers the holders it has seen. The table must outlive it.
 * Thread: any; ddb_lock_table_free once no call on the lock table is in flight. */
DDB_API ddb_lock_table *ddb_lock_table_new(ddb_table *table, const ddb_lock_table_options *o,
                                           ddb_error *err);
/* Frees it. Leases of it still held are released here (their locks freed, their ended
 * tokens set); each stays valid for its holder until ddb_lease_release, which then only
 * frees it. */
DDB_API void ddb_lock_table_free(ddb_lock_table *locks);
DDB_API ddb_table *ddb_lock_table_table(const ddb_lock_table *locks);

/* A refusal: a try on the lock table found lock `name` held by another and was turned
 * away (a ddb_lock_try_acquire that returns no lease, or a poll of ddb_lock_acquire or
 * of an election that waits on). fn runs on the thread that tried, before it waits; it
 * must be quick and must not call into the lock table. For tests and metrics that wait
 * for a contender to have tried, rather than count its requests. */
typedef void (*ddb_refusal_fn)(void *arg, const char *name);
/* Calls fn(arg, name) on each refusal from now on. Returns an id > 0 for
 * ddb_lock_table_unwatch_refusals, or DDB_EINVAL (no lock table or no fn) or DDB_ENOMEM
 * with err. Thread: any. */
DDB_API long ddb_lock_table_watch_refusals(ddb_lock_table *locks, ddb_refusal_fn fn,
                                           void *arg, ddb_error *err);
/* Ends the watch `id`: when this returns, its fn is not running and will not run again.
 * An unknown id does nothing. Thread: any but fn's own (it would wait for itself). */
DDB_API void ddb_lock_table_unwatch_refusals(ddb_lock_table *locks, long id);

/* Tries once: *out is the lease, or NULL when another holder has the lock. Never waits.
 * Takes over a crashed holder's lock only once this lock table has seen the holder
 * unchanged for a whole lease, over several calls. Thread: any. */
DDB_API int ddb_lock_try_acquire(ddb_lock_table *locks, const char *name, int64_t lease_ms,
                                 ddb_lease **out, ddb_cancel *cancel, ddb_error *err);
/* Waits until it has the lock or `stop` is set (DDB_ECANCELED). Polls every third of the
 * holder's lease, at most every 10 s, sooner if the lease runs out first, and takes over
 * a lock whose record version stayed the same for a whole lease. Thread: any. */
DDB_API int ddb_lock_acquire(ddb_lock_table *locks, const char *name, int64_t lease_ms,
                             ddb_lease **out, ddb_cancel *stop, ddb_error *err);

/* ------------------------------------------------------------------- slots */

/* Slots: at most N holders of one name at once (a counting semaphore, as `consul lock
 * -n N`). Slot K of NAME is the lock "NAME#slotK" (K in decimal without leading zeros,
 * 0 <= K < N): a lock of its own, with its own fencing token, which reads, watches,
 * fencing checks and ddb_lock_release_if take by that name as any lock's. Names of that
 * form are the slots' alone: ddb_lock_try_acquire, ddb_lock_acquire and
 * ddb_lock_run_as_leader refuse them (DDB_EINVAL), so a plain lock never takes a slot.
 * A slot's token orders the holders of that slot only, not of NAME as a whole (see
 * docs/coordination.md, "Slots"). */
#define DDB_LOCK_SLOTS_MAX 100
/* The size of a buffer that holds any lock name and its NUL (a slot's name included). */
#define DDB_LOCK_NAME_SIZE 256
/* The suffix of a slot's lock name, before the slot's number. */
#define DDB_LOCK_SLOT_SUFFIX "#slot"

typedef struct ddb_lock_slot_options {
    /* false (the default): wait as ddb_lock_acquire does until a slot is had or `stop`
     * is set. true: try each slot once and return at once, *out NULL when all are held
     * (as ddb_lock_try_acquire). */
    bool no_wait;
} ddb_lock_slot_options;

/* Acquires one free slot of the `slots` (1..DDB_LOCK_SLOTS_MAX) of `name`: 0 with *out
 * the slot's lease (release it with ddb_lease_release; ddb_lease_name is the slot's lock
 * name) and *slot (may be NULL) its number; 0 with *out NULL and *slot -1 when all are
 * held and o->no_wait; DDB_ECANCELED once `stop` is set while it waits; another DDB_E*
 * with err. o may be NULL (the defaults). Each pass tries the slots once each, starting
 * at a random one so that contenders spread over the slots, and each try is a
 * ddb_lock_try_acquire of that slot (a takeover included, once this lock table has seen
 * a slot's holder unchanged for a whole lease); when all are held it waits on the
 * client's clock until the earliest next poll of a slot. An error ends it holding
 * nothing: a write whose answer was lost is resolved by a read or handed back as an
 * acquire's is (DDB_EINDOUBT). Thread: any. */
DDB_API int ddb_lock_acquire_slot(ddb_lock_table *locks, const char *name, int slots,
                                  int64_t lease_ms, const ddb_lock_slot_options *o,
                                  ddb_lease **out, int *slot, ddb_cancel *stop,
                                  ddb_error *err);
/* Writes the lock name of slot `slot` (0..DDB_LOCK_SLOTS_MAX-1) of `name` into buf (size
 * bytes; DDB_LOCK_NAME_SIZE always suffices). 0, or DDB_EINVAL with err: a bad name, a
 * slot out of range, or a slot's name longer than a lock name may be.
 * Thread: any. */
DDB_API int ddb_lock_slot_name(const char *name, int slot, char *buf, size_t size,
                               ddb_error *err);
/* True when lock_name is a slot's ("NAME#slotK", K of 1 to 9 digits, no leading zeros,
 * NAME not empty); then *base_len (may be NULL) is NAME's length in bytes and *slot (may
 * be NULL) is K. Thread: any. */
DDB_API bool ddb_lock_slot_parse(const char *lock_name, size_t *base_len, int *slot);

/* Releases the lock (one conditional UpdateItem within the time the lease has left; a
 * failure is logged, DDB_EVENT_RELEASE_FAILED, never returned), sets ddb_lease_ended
 * and drops the holder's reference. Thread: the lease's owner. */
DDB_API void ddb_lease_release(ddb_lease *lease);
/* References: a lease handed to another thread (e.g. a thread the work of a leader
 * starts) stays valid for it, ended or released or not, until it drops its reference.
 * Take the reference before the handing on (before pthread_create), never in the other
 * thread. ddb_lease_unref never releases the lock: only ddb_lease_release does.
 * Thread: any. */
DDB_API ddb_lease *ddb_lease_ref(ddb_lease *lease);
DDB_API void ddb_lease_unref(ddb_lease *lease);
/* Borrowed: a token set once the lease is no longer held: released, or lost -- at the
 * latest at its deadline, the send of its last successful renewal plus the lease on
 * this client's clock, whatever request is in flight then. */
DDB_API ddb_cancel *ddb_lease_ended(ddb_lease *lease);
/* Renews at once, within the time the lease has left (its deadline cuts the request
 * and its retries short). 0 with *held true, 0 with *held false if the lease has ended,
 * or an error (the lease is left to its heartbeat). Thread: any, as are the getters. */
DDB_API int ddb_lease_renew(ddb_lease *lease, bool *held, ddb_cancel *cancel, ddb_error *err);
/* Changes the value the lease carries (NULL: none; else as
 * ddb_lock_table_options.lease_value): written with the next renewal, or at once by
 * ddb_lease_renew. DDB_EINVAL on a bad value (the lease keeps its own), DDB_ENOMEM.
 * Thread: any. */
DDB_API int ddb_lease_set_value(ddb_lease *lease, const char *value, ddb_error *err);
DDB_API int64_t ddb_lease_fencing_token(const ddb_lease *lease);
DDB_API const char *ddb_lease_name(const ddb_lease *lease);   /* borrowed */
DDB_API const char *ddb_lease_owner(const ddb_lease *lease);  /* borrowed */
DDB_API int64_t ddb_lease_duration_ms(const ddb_lease *lease);
DDB_API bool ddb_lease_takeover(const ddb_lease *lease);      /* taken over from a holder */
DDB_API ddb_lock_table *ddb_lease_lock_table(const ddb_lease *lease);

/* The event ids of the lock library's log events (ddb_log_fn's event_id), in the
 * category "dynalock.lock", each with the fields "lock", "table" and "holder" besides
 * those named here. libddb's own events carry DDB_EVENT_NONE (ddb.h). */
typedef enum ddb_lock_event {
    DDB_EVENT_LEASE_LOST = 40,          /* WARN: a lease was lost: reason, fencing_token */
    DDB_EVENT_LOCK_TAKEN_OVER = 41,     /* INFO: an acquire took the lock over from a holder
                                         * that stopped: previous_holder, fencing_token */
    DDB_EVENT_RENEWAL_FAILED = 42,      /* WARN: a renewal failed and is tried again while
                                         * the lease lasts: error, retry_in_ms, lease_left_ms */
    DDB_EVENT_RELEASE_FAILED = 43,      /* WARN: a release failed; the lock is free once the
                                         * lease runs out: error */
    DDB_EVENT_ELECTION_OUTAGE = 44,     /* WARN: an election's acquire failed, once per
                                         * outage: error, retry_in_ms */
    DDB_EVENT_LEADING = 45,             /* INFO: this process leads: fencing_token */
    DDB_EVENT_LEADING_ENDED = 46,       /* INFO: this process no longer leads: reason */
    DDB_EVENT_WORK_FAILED_LOST = 47,    /* DEBUG: the leader's work failed after its lease
                                         * was lost: error */
    DDB_EVENT_WORK_FAILED_CANCELED = 48, /* DEBUG: the leader's work failed after the caller
                                          * cancelled: error */
    DDB_EVENT_ELECTION_RECOVERED = 49,  /* INFO: an election's acquire works again after
                                         * an outage: outage_ms, retries */
} ddb_lock_event;

/* Thread: any. */
typedef enum ddb_loss_reason {
    DDB_LOSS_NONE = 0,         /* held, or released */
    DDB_LOSS_TAKEN_OVER,       /* another owner is in the item */
    DDB_LOSS_DELETED,          /* the item was deleted */
    DDB_LOSS_EXPIRED,          /* ran out on the monotonic clock without a renewal */
    DDB_LOSS_TABLE_NOT_FOUND,  /* ResourceNotFoundException */
} ddb_loss_reason;
DDB_API ddb_loss_reason ddb_lease_loss_reason(const ddb_lease *lease);
/* "taken_over", "deleted", "expired", "table_not_found", "none". */
DDB_API const char *ddb_loss_reason_name(ddb_loss_reason r);

/* The work of a leader: runs on the calling thread of ddb_lock_run_as_leader. `stop` is
 * set when the caller's stop is set or the lease is lost. A non-zero return is a fault
 * of the work (it "threw"); describe it in err. */
typedef int (*ddb_leader_fn)(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err);

/* Contends for the lock until the work ends or `stop` is set. Returns:
 *  0 -- the work returned 0 on its own; the lease was released;
 *  DDB_EWORK -- the work failed on its own; the lease was released; err is the work's;
 *  DDB_ECANCELED -- stop was set; the lease was released, whatever the work returned;
 *  another DDB_E* -- an error of the election (not transient), in err.
 * A lost lease makes it wait for the work and contend again.
 * Thread: any; the work runs on it. */
DDB_API int ddb_lock_run_as_leader(ddb_lock_table *locks, const char *name, int64_t lease_ms,
                                   ddb_leader_fn work, void *arg, ddb_cancel *stop,
                                   ddb_error *err);

/* The lease of the term that the calling thread runs in, or NULL. Thread-local: a thread
 * the work starts does not inherit it; hand it on with ddb_lease_set_current.
 * Thread: any; the current lease is the calling thread's own (thread-local). */
DDB_API ddb_lease *ddb_lease_current(void);
/* Makes lease current on the calling thread (NULL clears it); returns the previous. */
DDB_API ddb_lease *ddb_lease_set_current(ddb_lease *lease);

/* ------------------------------------------------------------ reading locks */

/* A holder label is at most 256 characters, so at most this many bytes of UTF-8. */
#define DDB_HOLDER_LABEL_MAX_BYTES (4 * DDB_HOLDER_LABEL_MAX)

/* Owner ids and record versions: at most this many bytes (dynalock writes 32). */
#define DDB_LOCK_ID_MAX_BYTES 128

/* The state of one lock as its item says, a value that the caller owns. */
typedef struct ddb_lock_state {
    bool exists;                           /* false: no item (all else zero) */
    bool is_held;                          /* the item has an owner */
    char holder_label[DDB_HOLDER_LABEL_MAX_BYTES + 1]; /* whole; "" when none */
    int64_t lease_ms;                      /* the holder's lease; 0 when free */
    int64_t fencing_token;                 /* 0 when the item has none */
    char owner[DDB_LOCK_ID_MAX_BYTES + 1]; /* the holder's owner id; "" when free */
    /* The record version: a new one at each acquire and renewal, so a holder whose
     * record version stays the same for a whole lease has stopped renewing. */
    char record_version[DDB_LOCK_ID_MAX_BYTES + 1]; /* "" when free */
    bool has_value;                        /* the holder carries a value */
    char value[DDB_LEASE_VALUE_MAX_BYTES + 1]; /* whole; "" when none */
    /* How long this reader (the lock table's reads and acquires, or the watch) has seen
     * this record version unchanged, on the client's clock: 0 at the first sight of it,
     * and when free. Compare with lease_ms: a holder seen unchanged for longer than its
     * lease has stopped renewing. */
    int64_t unchanged_ms;
} ddb_lock_state;

/* Reads the state of lock `name`: one strongly consistent GetItem, bounded by `cancel`
 * (may be NULL). A lock without an item gives exists == false and 0. An item at the
 * lock's key that has an owner but is not a lock is DDB_ESTATE, naming the lock and the
 * table; a table whose key attributes are not strings is DDB_EVALIDATION, saying so.
 * Never writes. The lock table remembers the record version it read, for unchanged_ms,
 * apart from the holders its acquires have seen: a read never hastens a takeover.
 * Thread: any. */
DDB_API int ddb_lock_table_get_state(ddb_lock_table *locks, const char *name,
                                     ddb_lock_state *out, ddb_cancel *cancel, ddb_error *err);

/* Listing the locks of a table: an iterator over the lock items, read page by page. With
 * the lock table's list_index, Queries of that index read the lock items and nothing
 * else (eventually consistent, as every read of a global index is). Without it, strongly
 * consistent Scans read the whole table and keep the lock items (the other entities of
 * a single-table design are read too, and dropped by the filter). In no particular
 * order. */
typedef struct ddb_lock_list ddb_lock_list;
typedef struct ddb_lock_list_options {
    int page_limit;            /* items read per request (Limit); 0 = DynamoDB's 1 MB page */
} ddb_lock_list_options;

/* Starts a list (no I/O yet); `cancel` (may be NULL, borrowed: it must outlive the
 * list) bounds each request. NULL with err on a bad argument or no memory. Free with
 * ddb_lock_list_free.
 * Thread: any; a list is then used by one thread at a time. */
DDB_API ddb_lock_list *ddb_lock_table_list(ddb_lock_table *locks,
                                           const ddb_lock_list_options *o,
                                           ddb_cancel *cancel, ddb_error *err);
/* The next lock: 1 with *name (borrowed until the next call or the free) and *out
 * filled, 0 when there are no more (and again after), or a negative DDB_E* (free the
 * list; start another to try again). Each lock item is returned once.
 * Thread: the list's. */
DDB_API int ddb_lock_list_next(ddb_lock_list *list, const char **name, ddb_lock_state *out,
                               ddb_error *err);
/* Frees the list; NULL is a no-op.
 * Thread: the list's. */
DDB_API void ddb_lock_list_free(ddb_lock_list *list);

/* Following a lock: the equivalent of `etcdctl elect --listen`. */
typedef struct ddb_lock_watch_options {
    /* How often to read a lock that is free or has no item; 0 = 1 s. A held lock is
     * read every third of its holder's lease (at most every 10 s), as a waiting
     * contender polls it. */
    int64_t free_poll_ms;
} ddb_lock_watch_options;
/* Called with the state when the watch starts and at each change of holder (owner),
 * fencing token or value; `state` is borrowed for the call. unchanged_ms counts from the
 * watch's first sight of the record version. A non-zero return ends the watch. */
typedef int (*ddb_lock_watch_fn)(void *arg, const char *name, const ddb_lock_state *state);
/* Follows lock `name` until fn returns non-zero (0) or `stop` is set (DDB_ECANCELED):
 * strongly consistent reads at the pace above, on the client's clock. A reader: it never
 * writes the lock, and never hastens a takeover. Transient errors (throttling, the
 * network, a timeout, 5xx) are tried again at the next poll; any other error ends the
 * watch and is returned.
 * Thread: any; fn runs on it. */
DDB_API int ddb_lock_table_watch(ddb_lock_table *locks, const char *name,
                                 const ddb_lock_watch_options *o, ddb_lock_watch_fn fn,
                                 void *arg, ddb_cancel *stop, ddb_error *err);

/* Checks a lock name: 1 to 255 bytes of printable UTF-8 without spaces. 0, or DDB_EINVAL
 * with a message naming the problem.
 * Thread: any. */
DDB_API int ddb_lock_name_check(const char *name, ddb_error *err);

/* -------------------------------------------------- writes without conditions */

/* These write a lock item as the lock table does, but WITHOUT the conditions that make
 * a lock safe: for tests that play another process, and for an operator who knows that
 * no holder is alive. Never while a holder may still be running. */

/* Writes a holder that acquired just now and never renews, with a new owner id: the
 * fencing token goes up by one, as on an acquire. holder_label (1..256 characters, may
 * be NULL: none) is written instead of the lock table's own. *token (may be NULL) gets
 * the new fencing token. Thread: any, as the two below. */
DDB_API int ddb_lock_force_hold(ddb_lock_table *locks, const char *name, int64_t lease_ms,
                                const char *holder_label, int64_t *token, ddb_cancel *cancel,
                                ddb_error *err);
/* Writes the release of whoever holds the lock, as a lease's release does (the fencing
 * token stays); a lock without an item stays without one. */
DDB_API int ddb_lock_force_release(ddb_lock_table *locks, const char *name,
                                   ddb_cancel *cancel, ddb_error *err);
/* Deletes the lock item, as time to live would: the next acquire starts the token at 1. */
DDB_API int ddb_lock_force_delete(ddb_lock_table *locks, const char *name, ddb_cancel *cancel,
                                  ddb_error *err);

/* ------------------------------------------------------- a release by hand */

/* Hands back lock `name` for an operator whose holder is stuck, on condition that the
 * item still has the holder it was shown: an owner (any owner when `owner` is NULL) and
 * this fencing token. The write is a lease's release (owner, lease and label removed; the
 * fencing token stays), so the next acquire gets fencing_token + 1. A newer holder (a
 * takeover since: another token or owner), a lock already free and a lock without an
 * item are left as they are: 0 with *released false. 0 with *released true when it was
 * released; a negative DDB_E* (in err) when the request failed, *released false. Only
 * for a holder known to be dead or stuck: a live holder loses its lease at its next
 * renewal (taken_over) but may act until then.
 * Thread: any. */
DDB_API int ddb_lock_release_if(ddb_lock_table *locks, const char *name, const char *owner,
                                int64_t fencing_token, bool *released, ddb_cancel *cancel,
                                ddb_error *err);

/* ------------------------------------------------------------------ fencing */

/* Fencing in a transaction: a ConditionCheck that the lock item still has this lease's
 * owner and fencing token. marker (may be NULL) identifies the check.
 * Thread: the one building the transaction. */
DDB_API int ddb_tx_check_lease(ddb_tx *tx, ddb_lease *lease, ddb_tx_marker *marker,
                               ddb_error *err);
/* The same check for a lease held elsewhere, e.g. by the process that started this one:
 * the lock item of `name` in `locks` still has this owner and this fencing token. An
 * invalid name, no owner or no memory is returned here and also fails the send.
 * Thread: the one building the transaction. */
DDB_API int ddb_tx_check_lock(ddb_tx *tx, ddb_lock_table *locks, const char *name,
                              const char *owner, int64_t fencing_token, ddb_tx_marker *marker,
                              ddb_error *err);
/* The same for ddb_lease_current(). Without a current lease: DDB_ESTATE with "No lease is
 * current; pass the lease, or start this work inside ddb_lock_run_as_leader", and the
 * transaction then fails its send with the same error. */
DDB_API int ddb_tx_check_current_lease(ddb_tx *tx, ddb_tx_marker *marker, ddb_error *err);

#ifdef __cplusplus
}
#endif
#endif
