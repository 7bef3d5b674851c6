/* coord_fixture.h: what the lock-layer suites share -- an in-process fakedb (or, with
 * DYNALOCK_TEST_ENDPOINT set, DynamoDB Local at that endpoint) with a fake client clock,
 * "processes" (a client, a table and a lock table each, as separate processes would
 * have), a recorder of their logs, spans and metrics, and the moves of other processes
 * written straight to the lock item. */
#ifndef COORD_FIXTURE_H
#define COORD_FIXTURE_H

#include <pthread.h>
#include <stdatomic.h>

#include <dynalock/coord.h>
#include <dynalock/ddb.h>
#include <fakedb/fakedb.h>

#include "coord_internal.h"
#include "dl_check.h"
#include "dl_fixture.h"

/* The tables every test gets: "Shop" (pk, sk) and "Flat" (pk only). Unique names on an
 * external endpoint, so runs do not see each other's items. */
typedef struct cx {
    dl_fixture fx;          /* fx.db is NULL against an external endpoint */
    bool external;
    char shop[64];
    char flat[64];
} cx;
extern cx CX;

/* check fixtures: a fresh server (or fresh tables) and a fake clock per test. */
void cx_setup(void);
void cx_teardown(void);
/* True when the fake server's own features (faults, counters) are there; tests that
 * need them return early when it is false. */
bool cx_fakedb(void);
#define CX_NEEDS_FAKEDB()                                                                  \
    do {                                                                                   \
        if (!cx_fakedb()) {                                                                \
            dl_check_skip(__func__, "needs the fake server");                              \
            return;                                                                        \
        }                                                                                  \
    } while (0)

/* ---------------------------------------------------------------- recorder */

#define REC_MAX 512
#define REC_FIELDS 10
typedef struct rec_log {
    int level, event_id;
    char category[32];
    char message[512];
    char keys[REC_FIELDS][32];
    char values[REC_FIELDS][300];
    size_t n;
} rec_log;
typedef struct rec_metric {
    char name[64], unit[16];
    double value;
    char keys[4][40];
    char values[4][64];
    size_t n;
} rec_metric;
typedef struct rec_span {
    uint64_t id, parent;
    char name[40];
    uint64_t links[2];
    size_t n_links;
    char keys[12][40];
    char values[12][64];
    size_t n;
    bool ended;
    char error_type[64];
} rec_span;
typedef struct rec {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* something was recorded */
    rec_log logs[REC_MAX];
    size_t n_logs;
    rec_metric metrics[REC_MAX * 8];
    size_t n_metrics;
    rec_span spans[REC_MAX];
    size_t n_spans;
} rec;

/* Counts logs with event_id (0: any). */
int rec_logs(rec *r, int event_id);
/* Copies the last log with event_id into out; false if none. */
bool rec_last_log(rec *r, int event_id, rec_log *out);
/* A field of a log ("" if absent). */
const char *rec_field(const rec_log *l, const char *key);
/* Counts metric points named name whose attribute key has value (key NULL: all). */
int rec_metrics(rec *r, const char *name, const char *key, const char *value);
/* Waits (real time, a hang guard) until n metric points named name were recorded. */
void rec_wait_metrics(rec *r, const char *name, int n);
/* Waits (real time, a hang guard) until n spans named name were started. */
void rec_wait_spans(rec *r, const char *name, int n);
/* Copies the last metric point named name; false if none. */
bool rec_last_metric(rec *r, const char *name, rec_metric *out);
const char *rec_metric_attr(const rec_metric *m, const char *key);
/* Counts spans named name; copies the last into out (may be NULL). */
int rec_spans(rec *r, const char *name, rec_span *out);
/* Counts spans whose parent is `parent` and whose name is name. */
int rec_children(rec *r, uint64_t parent, const char *name);
const char *rec_span_attr(const rec_span *s, const char *key);

/* ---------------------------------------------------------------- processes */

typedef struct proc {
    ddb_client *client;
    ddb_table *table;
    ddb_lock_table *locks;
    rec *rec;
    long hook;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long refusals;
} proc;

typedef struct proc_options {
    const char *table;      /* NULL = CX.shop */
    const char *holder_label;
    const char *lease_value;
    const char *ttl_attribute;
    int64_t ttl_retention_ms;
    int max_attempts;       /* the client's retries; 0 = DDB_NO_RETRIES */
    int log_level;          /* 0 = DDB_LOG_DEBUG */
} proc_options;

proc *cx_proc(const proc_options *o);
/* p's lock table acquires lock `name` at once (the test fails if it cannot). */
ddb_lease *cx_take(proc *p, const char *name, int64_t lease_ms);
void cx_proc_free(proc *p);
/* Refusals of the process's lock table so far. */
long proc_refusals(proc *p);
/* Waits (real time, a hang guard) until the lock table has been refused n times. */
void proc_wait_refusals(proc *p, long n);

/* Moves the fake clock and waits until the work it released (renewals, polls) is done. */
void cx_advance(int64_t ms);
int64_t cx_mono_ms(void);

/* A late write: telemetry that moves the fake clock (CX.fx.clock) by by_ms when the next
 * UpdateItem request starts (its span, a child of the lock call's), once per
 * cx_late_update_arm. The write is on its way when the time moves, as if its answer came
 * that late. Give &tel to a client's options; it must outlive the client. */
typedef struct cx_late_update {
    ddb_telemetry tel;
    int64_t by_ms;
    atomic_bool armed;
    atomic_int fired;       /* times it moved the clock */
} cx_late_update;
/* Sets l up, not armed. */
void cx_late_update_init(cx_late_update *l);
/* The next UpdateItem request moves the clock by by_ms (any thread). */
void cx_late_update_arm(cx_late_update *l, int64_t by_ms);

/* ----------------------------------------------------------- the lock item */

/* Reads the lock item (strongly consistent) through p's table. */
void cx_read(proc *p, const char *name, ddb__lock_item *out);
/* Another process acquires the lock now and never renews it (a holder that crashed).
 * Returns its fencing token. */
int64_t cx_sim_holder(proc *p, const char *name, int64_t lease_ms, const char *label);
/* The holder released it (owner, leaseMs and holder removed). */
void cx_sim_release(proc *p, const char *name);
/* The item is deleted. */
void cx_sim_delete(proc *p, const char *name);
/* Writes an arbitrary item at the lock's key (an entity that is no lock). */
void cx_put_raw(proc *p, const char *name, const char *attr, const char *value);

/* Requests the fake server received for an operation, and its condition failures. */
long cx_requests(const char *operation);
long cx_condition_failures(const char *operation);

/* ----------------------------------------------------- acquires on a thread */

typedef struct bg {
    pthread_t th;
    proc *p;
    const char *name;
    int64_t lease_ms;
    ddb_cancel *stop;
    int rc;
    ddb_lease *lease;
    ddb_error err;
    atomic_bool done;
    /* run_as_leader */
    ddb_leader_fn work;
    void *arg;
} bg;

/* Starts ddb_lock_acquire on a thread; bg_join waits for it (real-time hang guard). */
void bg_acquire(bg *b, proc *p, const char *name, int64_t lease_ms);
/* Starts ddb_lock_run_as_leader(work, arg) on a thread. */
void bg_leader(bg *b, proc *p, const char *name, int64_t lease_ms, ddb_leader_fn work,
               void *arg);
int bg_join(bg *b);
bool bg_done(bg *b);

/* An event a test waits for across threads. */
typedef struct cx_event {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count;
} cx_event;
void cx_event_init(cx_event *e);
void cx_event_signal(cx_event *e);
/* Waits (real time, a hang guard) until the event has been signalled n times. */
void cx_event_wait(cx_event *e, int n);
void cx_event_destroy(cx_event *e);

#endif
