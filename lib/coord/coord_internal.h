/* coord_internal.h: libddb_coord's internal interfaces between its modules (lock table,
 * lease, heartbeat scheduler, acquire, election, fencing), and the few functions it
 * exports for libddb_testing (marked DDB_API; not public API, may change). */
#ifndef DDB_COORD_INTERNAL_H
#define DDB_COORD_INTERNAL_H

#include <dynalock/coord.h>

#include <pthread.h>
#include <stdatomic.h>

/* ------------------------------------------------------------- the lock item */

/* Attribute names of a lock item: fixed, since every contender reads the item alike. */
#define DDB__LOCK_ATTR_TYPE "_type"
#define DDB__LOCK_ATTR_OWNER "owner"
#define DDB__LOCK_ATTR_RVN "rvn"
#define DDB__LOCK_ATTR_FENCE "fence"
#define DDB__LOCK_ATTR_LEASE_MS "leaseMs"
#define DDB__LOCK_ATTR_HOLDER "holder"
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
DDB_API void ddb__lock_new_id(char out[DDB__LOCK_ID_LEN + 1]);
/* Checks a lock name; DDB_EINVAL with a message naming the problem. */
DDB_API int ddb__lock_name_check(const char *name, ddb_error *err);
/* The key item of lock `name` in the lock table's table (pk "LOCK#<name>", and sk
 * "LOCK" when the table has a sort key). Caller frees. NULL with err on a bad name. */
DDB_API ddb_item *ddb__lock_key(const ddb_lock_table *locks, const char *name, ddb_error *err);
/* The time-to-live attribute (borrowed), or NULL when the lock table writes none. */
DDB_API const char *ddb__lock_table_ttl_attribute(const ddb_lock_table *locks);
/* The value the time-to-live attribute gets on a write now: the wall clock of the
 * client plus the retention, in seconds since the epoch. */
DDB_API int64_t ddb__lock_table_ttl_epoch_s(const ddb_lock_table *locks);
/* The holder label (borrowed), or NULL. */
DDB_API const char *ddb__lock_table_holder_label(const ddb_lock_table *locks);

/* A lock item as read. Strings are malloc'd; free with ddb__lock_item_cleanup. */
typedef struct ddb__lock_item {
    bool exists;
    bool held;          /* has an owner */
    char *owner;        /* NULL when free */
    char *rvn;
    char *holder;       /* NULL when none */
    int64_t lease_ms;   /* 0 when free */
    int64_t fence;      /* 0 when none */
} ddb__lock_item;
/* Reads a lock item (it may be NULL: no item). An item with an owner but without a
 * lock's other attributes is DDB_ESTATE, naming the lock and the table. */
DDB_API int ddb__lock_item_parse(const ddb_lock_table *locks, const char *name,
                                 const ddb_item *item, ddb__lock_item *out, ddb_error *err);
DDB_API void ddb__lock_item_cleanup(ddb__lock_item *li);

/* ----------------------------------------------------------------- refusals */

/* Called each time a try of the lock table finds the lock held and is turned away: a
 * try_acquire that returns no lease, or a poll of acquire or run_as_leader that waits
 * on. Runs on the thread that tried, before it waits; must not call into the lock
 * table. */
typedef void (*ddb__refusal_fn)(void *arg, const char *name);
/* Registers fn; returns an id > 0, or DDB_ENOMEM. */
DDB_API long ddb__lock_table_on_refusal(ddb_lock_table *locks, ddb__refusal_fn fn, void *arg);
/* Removes it; when this returns, fn is not running and will not run again. */
DDB_API void ddb__lock_table_off_refusal(ddb_lock_table *locks, long id);

/* ------------------------------------------------------------ the heartbeat */

/* A fake clock's settle hook (ddb__clock_set_settle_hook, registered with the first
 * scheduler): blocks (real time, at most real_timeout_ms) until the heartbeat schedulers
 * of every client on `clock`, and every acquire or election polling on it, have done all
 * the work that is due at the clock's now and wait on the clock again (or returned).
 * 0 or DDB_ETIMEDOUT. Tests call ddb_fake_clock_settle, which consults it. */
DDB_API int ddb__heartbeat_settle(ddb_clock *clock, int64_t real_timeout_ms);
/* The number of scheduler threads running (all clients), for tests and benchmarks. */
DDB_API int ddb__heartbeat_threads(void);

/* ------------------------------------------------------ between the modules */

typedef struct dl_sched dl_sched;
typedef struct dl_seen dl_seen;

typedef struct dl_refusal_hook {
    long id;
    ddb__refusal_fn fn;
    void *arg;
    struct dl_refusal_hook *next;
} dl_refusal_hook;

struct ddb_lock_table {
    ddb_table *table;
    ddb_client *client;
    ddb_clock *clock;          /* the client's; borrowed */
    char *holder_label;        /* NULL when none */
    char *ttl_attribute;       /* NULL when none */
    int64_t ttl_retention_ms;
    dl_sched *sched;           /* the client's heartbeat scheduler, referenced */

    pthread_mutex_t mu;        /* guards what follows */
    dl_seen *seen;             /* holders seen: name -> (owner, rvn, first seen) */
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
    int64_t expiry_ns;         /* mono: last successful renewal's send + lease */
    int64_t last_sent_ns;      /* mono: send of the last successful write */
    int64_t retry_delay_ms;    /* the heartbeat's next wait after a failure, 0 = none */
    int64_t next_attempt_ns;   /* mono: when the heartbeat renews next */
    _Atomic int loss;          /* ddb_loss_reason */
    bool released;             /* ended and its lock released (dl_lease_end) */
    bool caller_let_go;        /* ddb_lease_release was called: the caller's ref is gone */

    /* Heartbeat (guarded by the scheduler's mutex). */
    dl_sched *sched;
    size_t heap_index;
    bool in_heap;
    bool in_flight;
    bool removed;
    int64_t due_ns;

    /* The lock table's list (guarded by the lock table's mutex). */
    struct ddb_lease *prev, *next;
};

/* locktable.c: seen holders. */
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
void dl_seen_entry_cleanup(dl_seen_entry *e);
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
/* Release: removes owner, leaseMs, holder on condition owner = lease's. */
int dl_item_release(ddb_lease *lease, ddb_error *err);

/* observe.c: spans, metrics and logs of the lock layer. */
uint64_t dl_span_start(ddb_client *c, const char *span_name, uint64_t parent,
                       const uint64_t *links, size_t n_links, const char *table,
                       const char *lock_name);
void dl_span_attr_bool(ddb_client *c, uint64_t span, const char *key, bool v);
void dl_span_attr_int(ddb_client *c, uint64_t span, const char *key, int64_t v);
void dl_span_end(ddb_client *c, uint64_t span, const char *error_type);
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
bool dl_log_enabled(ddb_client *c, int level);

/* lease.c */
ddb_lease *dl_lease_new(ddb_lock_table *locks, const char *name, const char *owner,
                        const char *rvn, int64_t lease_ms, int64_t fence, bool takeover,
                        int64_t sent_ns, uint64_t acquire_span);
void dl_lease_ref(ddb_lease *lease);
void dl_lease_unref(ddb_lease *lease);
/* Ends the lease with a loss; false when it had ended already. Logs 40, counts it. */
bool dl_lease_lose(ddb_lease *lease, ddb_loss_reason reason);
/* One renewal (span, metric, state). 0 held, DDB_ELOST when the lease is lost (or had
 * ended), another code for an error that leaves the lease as it was. `root` makes the
 * span a root (the heartbeat's). */
int dl_lease_renew_once(ddb_lease *lease, ddb_cancel *cancel, bool root, ddb_error *err);
/* Releases the lock of a lease (no free). */
void dl_lease_release_lock(ddb_lease *lease);
/* Ends a lease: sets ended, stops its heartbeat, releases its lock, takes it off its
 * lock table. Once only; keeps every reference (ddb_lease_release drops the caller's). */
void dl_lease_end(ddb_lease *lease);

/* heartbeat.c: the client's scheduler, shared by its lock tables. */
dl_sched *dl_sched_get(ddb_client *client, ddb_error *err);
void dl_sched_put(dl_sched *s);
/* Starts the heartbeat of a lease; its next renewal is a third after its write. */
int dl_sched_add(dl_sched *s, ddb_lease *lease, ddb_error *err);
/* Stops the heartbeat; when this returns, the scheduler is not renewing the lease. */
void dl_sched_remove(dl_sched *s, ddb_lease *lease);
/* The lease's next renewal moved (after ddb_lease_renew). */
void dl_sched_reschedule(dl_sched *s, ddb_lease *lease);

/* heartbeat.c: threads that poll on the clock, so that ddb__heartbeat_settle sees them.
 * Between begin and end a thread counts as busy except while parked in dl_poller_wait. */
typedef struct dl_poller {
    ddb_clock *clock;
    bool parked;
    int64_t deadline_ns;
    struct dl_poller *prev, *next;
} dl_poller;
void dl_poller_begin(dl_poller *p, ddb_clock *clock);
int dl_poller_wait(dl_poller *p, int64_t deadline_ns, ddb_cancel *stop);
void dl_poller_end(dl_poller *p);

/* acquire.c */
/* What the election wants to know of an acquire. */
typedef struct dl_acquire_hooks {
    /* DynamoDB answered a request of the acquire (the lock found free or held). */
    void (*answered)(void *arg);
    void *arg;
    /* The caller's poller (the election keeps one while it contends); NULL: its own. */
    dl_poller *poller;
} dl_acquire_hooks;
int dl_acquire(ddb_lock_table *locks, const char *name, int64_t lease_ms, ddb_cancel *stop,
               bool once, const dl_acquire_hooks *hooks, ddb_lease **out, ddb_error *err);
int dl_lease_ms_check(int64_t lease_ms, ddb_error *err);

#define DL_NS_PER_MS 1000000LL

#endif
