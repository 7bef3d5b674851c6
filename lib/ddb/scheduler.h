/* scheduler.h: the scheduler of a client's background time (scheduler.c): timed tasks on a
 * clock, run one at a time on one worker thread, beside the client's asynchronous HTTP
 * transfers. Used by the client (retries of asynchronous requests) and by lib/coord
 * (renewals and deadlines of leases). See docs/internals/time.md. */
#ifndef DDB_SCHEDULER_H
#define DDB_SCHEDULER_H

#include "ddb_private.h"

/* A task, embedded in its owner's struct: no allocation per scheduling. Zero-initialise
 * and set fn and arg; the scheduler owns the other fields while the task is queued. */
typedef struct ddb__task {
    void (*fn)(void *arg);       /* runs on the worker thread */
    void *arg;
    int64_t due_ns;              /* mono time on the scheduler's clock */
    size_t index;                /* its place in the heap */
    bool queued;
} ddb__task;

/* An I/O source the worker polls beside its timers (the client's curl multi handle).
 * wait: block until a descriptor of the source or wake_fd is readable, or timeout_ms
 * passes (-1: no timeout). run: do the I/O that is ready and deliver what finished.
 * busy: transfers in flight (for settle). All three run on the worker thread, except
 * busy, which any thread may call. */
typedef struct ddb__sched_io {
    void (*wait)(void *arg, int wake_fd, int64_t timeout_ms);
    void (*run)(void *arg);
    int (*busy)(void *arg);
} ddb__sched_io;

typedef struct ddb__sched ddb__sched;

/* A scheduler on `clock` (referenced); its worker starts with the first task. io may be
 * NULL. No I/O. */
ddb__sched *ddb__sched_new(ddb_clock *clock, const ddb__sched_io *io, void *io_arg,
                           ddb_error *err);
/* The scheduler of a clock's own timers (clock.c): it holds no reference on the clock,
 * which owns it. */
ddb__sched *ddb__sched_new_timers(ddb_clock *clock);
/* Stops the worker (a task that runs is finished first) and frees the scheduler. Tasks
 * still queued are dropped, not run. On the worker thread itself (a task dropped the
 * last reference to the scheduler's owner), the worker finishes and frees it once the
 * task returns. */
void ddb__sched_free(ddb__sched *s);
/* Queues t to run at due_ns (mono, on the scheduler's clock), or moves it there if it is
 * queued. 0, or DDB_ENOMEM. Any thread. */
int ddb__sched_at(ddb__sched *s, ddb__task *t, int64_t due_ns);
/* Takes t off the queue; true when it was queued. When it returns on a thread other than
 * the worker, t is not running and will not run until queued again. Any thread. */
bool ddb__sched_cancel(ddb__sched *s, ddb__task *t);
/* Cuts the worker's wait short (e.g. the I/O source has work for it). Any thread. */
void ddb__sched_wake(ddb__sched *s);
/* For a fake clock's settle: the worker is parked with no task due at the clock's now,
 * no wake pending and no transfer in flight. */
bool ddb__sched_quiet(ddb__sched *s);
/* Blocks until ddb__sched_quiet, or until real_deadline_ns (CLOCK_MONOTONIC) passes:
 * 0 or DDB_ETIMEDOUT. */
int ddb__sched_wait_quiet(ddb__sched *s, int64_t real_deadline_ns);
/* A settle keeps the scheduler from being freed while it looks at it (a free waits). */
void ddb__sched_pin(ddb__sched *s);
void ddb__sched_unpin(ddb__sched *s);
/* Worker threads running in the process (for tests and benchmarks). */
int ddb__sched_workers(void);

/* The client's scheduler (client.c), made (with its thread, on its first task) on first
 * use; the client owns it. NULL with err when it cannot be made. Any thread. */
ddb__sched *ddb__client_sched(ddb_client *c, ddb_error *err);

/* ---- what the scheduler needs of the clock (clock.c) */
typedef enum ddb__clock_kind { DDB__CLOCK_SYSTEM, DDB__CLOCK_FAKE, DDB__CLOCK_CUSTOM } ddb__clock_kind;
ddb__clock_kind ddb__clock_kind_of(const ddb_clock *c);
/* A fake clock wakes the schedulers on it when it is advanced, and its settle waits for
 * them to be quiet, through the calls a scheduler registers with itself (clock.c names
 * no function of the scheduler). No effect on other clocks. */
typedef struct ddb__sched_hooks {
    void (*wake)(ddb__sched *s);
    void (*pin)(ddb__sched *s);
    void (*unpin)(ddb__sched *s);
    bool (*quiet)(ddb__sched *s);
    int (*wait_quiet)(ddb__sched *s, int64_t deadline_real_ns);
} ddb__sched_hooks;
void ddb__clock_add_sched(ddb_clock *c, ddb__sched *s, const ddb__sched_hooks *hooks);
void ddb__clock_remove_sched(ddb_clock *c, ddb__sched *s);
/* Marks the calling thread as driving the clock's work (a scheduler's worker): a cancel
 * token it sets wakes fake-clock waits that settle then counts as released work. */
void ddb__clock_thread_drives(ddb_clock *c);
/* The timers of system and custom clocks run on a scheduler the clock owns, made when
 * the first timer is added and freed with the clock. The calls to make, use and free it
 * come with each timer (cancel_after.c passes the scheduler's), so that clock.c names no
 * function of the scheduler. */
typedef struct ddb__timer_sched_ops {
    ddb__sched *(*make)(ddb_clock *c);
    int (*at)(ddb__sched *s, ddb__task *t, int64_t due_ns);
    bool (*cancel)(ddb__sched *s, ddb__task *t);
    void (*free)(ddb__sched *s);
} ddb__timer_sched_ops;

#endif
