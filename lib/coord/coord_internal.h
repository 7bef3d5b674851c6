/* coord_internal.h: the lock layer's internal interfaces between its modules (lock
 * table, lease, heartbeat scheduler, acquire, election, fencing). Not public API, never
 * exported. */
#ifndef DDB_COORD_INTERNAL_H
#define DDB_COORD_INTERNAL_H

#include <dynalock/coord.h>

#include "scheduler.h"

#include <pthread.h>
#include <stdatomic.h>

/* ------------------------------------------------------------- the lock item */

/* Attribute names of a lock item: fixed, since every contender reads the item alike. */
#define DDB__LOCK_ATTR_TYPE DDB_LOCK_INDEX_KEY
#define DDB__LOCK_ATTR_OWNER "owner"
#define DDB__LOCK_ATTR_RVN "rvn"
#define DDB__LOCK_ATTR_FENCE "fence"
#define DDB__LOCK_ATTR_LEASE_MS "leaseMs"
#define DDB__LOCK_ATTR_HOLDER "holder"
#define DDB__LOCK_ATTR_VALUE "value"
/* The value of _type, the prefix of the partition key, and the sort key. */
#define DDB__LOCK_TYPE_VALUE "LOCK"
#define DDB__LOCK_PK_PREFIX "LOCK#"
#define DDB__LOCK_SK_VALUE "LOCK"
/* The log category of the lock layer. */
#define DDB__LOCK_LOG_CATEGORY "dynalock.lock"
/* Lock names: 1..DDB__LOCK_NAME_MAX bytes, printable, no spaces or control characters. */
#define DDB__LOCK_NAME_MAX 255
/* Owner and record version ids: 128 random bits as 32 lowercase hex digits. */
#define DDB__LOCK_ID_LEN 32

/* Fills out with a new random id (DDB__LOCK_ID_LEN hex digits and a NUL). */
void ddb__lock_new_id(char out[DDB__LOCK_ID_LEN + 1]);
/* The key item of lock `name` in the lock table's table (pk "LOCK#<name>", and sk
 * "LOCK" when the table has a sort key). Caller frees. NULL with err on a bad name. */
ddb_item *ddb__lock_key(const ddb_lock_table *locks, const char *name, ddb_error *err);
/* The time-to-live attribute (borrowed), or NULL when the lock table writes none. */
const char *ddb__lock_table_ttl_attribute(const ddb_lock_table *locks);
/* The value the time-to-live attribute gets on a write now: the wall clock of the
 * client plus the retention, in seconds since the epoch. */
int64_t ddb__lock_table_ttl_epoch_s(const ddb_lock_table *locks);
/* The holder label (borrowed), or NULL. */
const char *ddb__lock_table_holder_label(const ddb_lock_table *locks);

/* A lock item as read. Strings are malloc'd; free with ddb__lock_item_cleanup. */
typedef struct ddb__lock_item {
    bool exists;
    bool held;          /* has an owner */
    char *owner;        /* NULL when free */
    char *rvn;
    char *holder;       /* NULL when none */
    char *value;        /* NULL when none */
    int64_t lease_ms;   /* 0 when free */
    int64_t fence;      /* 0 when none */
} ddb__lock_item;
/* Reads a lock item (it may be NULL: no item). An item with an owner but without a
 * lock's other attributes is DDB_ESTATE, naming the lock and the table. */
int ddb__lock_item_parse(const ddb_lock_table *locks, const char *name,
                                 const ddb_item *item, ddb__lock_item *out, ddb_error *err);
void ddb__lock_item_cleanup(ddb__lock_item *li);
/* A read item (NULL: none) as the public state, with unchanged_ms 0. */
int dl_state_of(const ddb_lock_table *locks, const char *name, const ddb_item *item,
                ddb_lock_state *out, ddb_error *err);

/* ------------------------------------------------------ between the modules */

typedef struct dl_seen dl_seen;

typedef struct dl_refusal_hook {
    long id;
    ddb_refusal_fn fn;
    void *arg;
    struct dl_refusal_hook *next;
} dl_refusal_hook;

struct ddb_lock_table {
    ddb_table *table;
    ddb_client *client;
    ddb_clock *clock;          /* the client's; borrowed */
    char *holder_label;        /* NULL when none */
    char *ttl_attribute;       /* NULL when none */
    char *list_index;          /* NULL when none: lists scan */
    char *lease_value;         /* NULL when none */
    int64_t ttl_retention_ms;

    pthread_mutex_t mu;        /* guards what follows */
    dl_seen *seen;             /* holders seen: name -> (owner, rvn, first seen) */
    dl_seen *read_seen;        /* the same for reads (never used by a takeover) */
    struct ddb_lease *leases;  /* leases held, a list (for ddb_lock_table_free) */
    dl_refusal_hook *hooks;
    long next_hook_id;
    pthread_cond_t hooks_idle; /* signalled when no hook is running */
    int hooks_running;
};

struct ddb_lease {
    atomic_int refs;
    ddb_lock_table *_Atomic locks; /* NULL once the lock table is freed */
    ddb_table *table;
    ddb_client *client;
    ddb_clock *clock;
    char *name;
    char owner[DDB__LOCK_ID_LEN + 1];
    int64_t lease_ms;
    int64_t fence;
    bool takeover;
    uint64_t acquire_span;     /* the span of the acquire, linked from renewals */
    ddb_cancel *ended;

    pthread_mutex_t mu;        /* guards the state below */
    char rvn[DDB__LOCK_ID_LEN + 1];
    char *value;               /* written with each renewal; NULL none */
    int64_t expiry_ns;         /* mono: last successful renewal's send + lease */
    int64_t last_sent_ns;      /* mono: send of the last successful write */
    int64_t retry_delay_ms;    /* the heartbeat's next wait after a failure, 0 = none */
    int64_t next_attempt_ns;   /* mono: when the heartbeat renews next */
    _Atomic int loss;          /* ddb_loss_reason */
    bool released;             /* ended and its lock released (dl_lease_end) */
    bool caller_let_go;        /* ddb_lease_release was called: the caller's ref is gone */

    /* The heartbeat: tasks on the client's scheduler (heartbeat.c). */
    ddb__sched *sched;         /* NULL until the heartbeat starts */
    ddb__task renew_task;      /* the next renewal */
    ddb__task deadline_task;   /* the lease runs out: lost with `expired` */
    ddb__task cleanup_stop_task; /* bounds the release sent after a loss */
    /* Guarded by mu: */
    bool beating;              /* the heartbeat runs (and holds a reference) */
    bool renewing;             /* a renewal is in flight */
    int64_t renew_sent_ns;     /* its send time */
    char renew_rvn[DDB__LOCK_ID_LEN + 1];
    uint64_t renew_span;
    bool cleaning;             /* the release after a loss is in flight */
    bool cleaned;              /* ... was done: the caller's release need not repeat it */
    ddb_cancel *cleanup_stop;  /* aborts it */
    pthread_cond_t idle;       /* renewing or cleaning went false */

    /* The lock table's list (guarded by the lock table's mutex). */
    struct ddb_lease *prev, *next;
};

/* tablestate.c: seen holders, and the leases a table holds. */
typedef struct dl_seen_entry {
    char *owner;
    char *rvn;
    char *holder;
    int64_t lease_ms;
    int64_t first_seen_ns;
} dl_seen_entry;
/* Copies the entry for name into out (true) or returns false. */
bool dl_seen_get(ddb_lock_table *locks, const char *name, dl_seen_entry *out);
/* Records that `name` is held by (owner, rvn): keeps the first-seen time when the same
 * record version was seen before, else starts it at now_ns. Fills out with the entry. */
int dl_seen_put(ddb_lock_table *locks, const char *name, const ddb__lock_item *li,
                int64_t now_ns, dl_seen_entry *out);
/* The key of lock `name` in `table`. */
ddb_item *dl_lock_key_table(ddb_table *table, const char *name, ddb_error *err);
void dl_seen_forget(ddb_lock_table *locks, const char *name);
/* How long this lock table has seen the record version of li unchanged, by its reads
 * (recorded, when `record`) and its acquires (never changed here): 0 when free or first
 * seen now. */
int64_t dl_seen_unchanged_ms(ddb_lock_table *locks, const char *name, const ddb__lock_item *li,
                             int64_t now_ns, bool record);
void dl_seen_entry_cleanup(dl_seen_entry *e);
/* Frees a table's cache of holders seen (the lock table's end). */
void dl_seen_free(dl_seen *s);
void dl_refused(ddb_lock_table *locks, const char *name);
void dl_table_add_lease(ddb_lock_table *locks, ddb_lease *lease);
void dl_table_remove_lease(ddb_lock_table *locks, ddb_lease *lease);

/* lockitem.c: the requests of a lock. */
/* The acquire write; `seen` (may be NULL) is the holder that may be replaced. Fills *old
 * with the item as it was before the write, or, on DDB_ECONDITION, the item as it is. */
int dl_item_acquire(ddb_lock_table *locks, const char *name, const char *owner,
                    const char *rvn, int64_t lease_ms, const dl_seen_entry *seen,
                    ddb_cancel *cancel, ddb_item **old, ddb_error *err);
/* Strongly consistent read of the item (*item NULL when none). */
int dl_item_read(ddb_lock_table *locks, const char *name, ddb_cancel *cancel,
                 ddb_item **item, ddb_error *err);
/* Renewal: new rvn on condition owner = lease's. On DDB_ECONDITION *old is the item as
 * it is (NULL when deleted). */
int dl_item_renew(ddb_lease *lease, const char *rvn, ddb_cancel *cancel, ddb_item **old,
                  ddb_error *err);
/* The same, asynchronous, on the client's scheduler (ddb__update_item_start). */
int dl_item_renew_start(ddb_lease *lease, const char *rvn, ddb_cancel *cancel,
                        ddb__item_reply_fn fn, void *arg, ddb_error *err);
/* Release: removes owner, leaseMs, holder on condition owner = lease's. */
int dl_item_release(ddb_lease *lease, ddb_cancel *cancel, ddb_error *err);
int dl_item_release_start(ddb_lease *lease, ddb_cancel *cancel, ddb__item_reply_fn fn,
                          void *arg, ddb_error *err);

/* A request on a lock's key that DynamoDB refused because the table's key attributes
 * are not strings: rewrites err to say so, naming the lock and the table. Returns rc. */
int dl_key_rule(const ddb_lock_table *locks, const char *name, int rc, ddb_error *err);
/* A write's condition failed: DDB_ECONDITION, or DDB_EINDOUBT whose last attempt failed
 * its condition (an earlier attempt's answer was lost). */
bool dl_condition_failed(int rc, const ddb_error *e);
/* After a write in doubt: reads lock `name` with a consistent read and parses it into li
 * (to clean up with ddb__lock_item_cleanup in every case). 0, or the read's error. */
int dl_item_resolve(ddb_lock_table *locks, const char *name, ddb_cancel *cancel,
                    ddb__lock_item *li, ddb_error *err);
/* Releases lock `name` on condition that `owner` holds it: the hand-back of an acquire
 * whose outcome is in doubt. 0, DDB_ECONDITION (not held by owner), or an error; with fn,
 * started on the client's scheduler instead, fn told the outcome there. */
int dl_item_release_owner(ddb_lock_table *locks, const char *name, const char *owner,
                          ddb_cancel *cancel, ddb__item_reply_fn fn, void *arg,
                          ddb_error *err);
/* The fenced check: a ConditionCheck in tx that the item of lock `name` in `table` has
 * this owner and fencing token. 0, or an error in err (not yet given to tx). */
int dl_item_check(ddb_tx *tx, ddb_table *table, const char *name, const char *owner,
                  int64_t fence, ddb_tx_marker *marker, ddb_error *err);


/* observe.c: spans, metrics and logs of the lock layer. A lock span starts here with
 * its attributes; the rest of its plumbing is the client's (ddb__span_*, telemetry.c). */
uint64_t dl_span_start(ddb_client *c, const char *span_name, uint64_t parent,
                       const uint64_t *links, size_t n_links, const char *table,
                       const char *lock_name);
/* error.type of an error: the AWS type if there is one, else the code's name. */
const char *dl_error_type(const ddb_error *e, int rc);
void dl_metric_acquisition(ddb_client *c, const char *table, bool takeover);
void dl_metric_renewal(ddb_client *c, const char *table, const char *error_type);
void dl_metric_loss(ddb_client *c, const char *table, ddb_loss_reason reason);
void dl_metric_contention_retry(ddb_client *c, const char *table, const char *error_type);
/* Logs event_id at level in the lock category; fields are key/value pairs ending with
 * NULL; the message is printf-style. */
void dl_log(ddb_client *c, int level, int event_id, const char *const *fields,
            const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* lease.c */
ddb_lease *dl_lease_new(ddb_lock_table *locks, const char *name, const char *owner,
                        const char *rvn, int64_t lease_ms, int64_t fence, bool takeover,
                        int64_t sent_ns, uint64_t acquire_span);
/* Ends the lease with a loss; false when it had ended already. Logs 40, counts it. */
bool dl_lease_lose(ddb_lease *lease, ddb_loss_reason reason);
/* What a renewal's outcome does to the lease (both the heartbeat's and
 * ddb_lease_renew's): rc of the write sent at sent_ns with rvn, answered at after_ns;
 * old_exists tells, on DDB_ECONDITION, whether the item is still there. Returns 0 when
 * the lease is held and renewed, DDB_ELOST when it is lost (or had ended: a late answer
 * never revives it), else rc (an error that leaves the lease as it was). */
int dl_lease_renewed(ddb_lease *lease, int rc, const char *rvn, int64_t sent_ns,
                     int64_t after_ns, bool old_exists,
                     const ddb_error *e);
/* release.c */
/* Releases the lock of a lease (no free), bounded by `cancel` (may be NULL). */
void dl_lease_release_lock(ddb_lease *lease, ddb_cancel *cancel);
/* Ends a lease: sets ended, stops its heartbeat, releases its lock, takes it off its
 * lock table. Once only; keeps every reference (ddb_lease_release drops the caller's). */
void dl_lease_end(ddb_lease *lease);

/* heartbeat.c: a lease's renewals: tasks on its client's scheduler, and ddb_lease_renew. */
/* Starts the heartbeat of a lease (its next renewal a third after its write) and its
 * deadline. */
int dl_heartbeat_start(ddb_lease *lease, ddb_error *err);
/* Stops both; when this returns, no task of the lease runs or will run, and no request
 * of it is in flight (a renewal on its way is aborted). Not on the scheduler's thread. */
void dl_heartbeat_stop(ddb_lease *lease);
/* The lease's next renewal or deadline moved (after ddb_lease_renew). */
void dl_heartbeat_moved(ddb_lease *lease);

/* acquire.c */
/* What the election wants to know of an acquire. */
typedef struct dl_acquire_hooks {
    /* DynamoDB answered a request of the acquire (the lock found free or held). */
    void (*answered)(void *arg);
    void *arg;
    /* A slot's acquire: the name may be a slot's (others refuse such names). */
    bool slot;
    /* When set, a try (once) that is refused stores the mono time of the poll it would
     * make next (a slot's acquire waits for the earliest of its slots'). */
    int64_t *next_poll_ns;
} dl_acquire_hooks;
int dl_acquire(ddb_lock_table *locks, const char *name, int64_t lease_ms, ddb_cancel *stop,
               bool once, const dl_acquire_hooks *hooks, ddb_lease **out, ddb_error *err);
int dl_lease_ms_check(int64_t lease_ms, ddb_error *err);
/* tablestate.c: a holder label, 1..DDB_HOLDER_LABEL_MAX characters of printable UTF-8. */
int dl_label_check(const char *label, ddb_error *err);
/* A lease value: 1..DDB_LEASE_VALUE_MAX_BYTES bytes of valid UTF-8. */
int dl_value_check(const char *value, ddb_error *err);

#define DL_NS_PER_MS 1000000LL

/* A third of a lease, the one period of the lock layer: the heartbeat's (the next
 * renewal a third after the last one was sent), a contender's and a watch's poll of a
 * held lock, the pause of an election after a failed acquire, and the bound of the
 * writes that hand a lock back. In ns (exact), and in ms (at least 1). */
static inline int64_t dl_third_ns(int64_t lease_ms)
{
    return lease_ms * DL_NS_PER_MS / 3;
}
static inline int64_t dl_third_ms(int64_t lease_ms)
{
    return lease_ms / 3 > 0 ? lease_ms / 3 : 1;
}

#endif
