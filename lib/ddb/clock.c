/* clock.c: ddb_clock, the one source of time and of timed waits in the library: the
 * system clock, a fake clock that tests advance by hand (with "settle" to wait for the
 * work an advance released), clocks supplied by the caller, and the timers behind
 * ddb_cancel_after (cancel_after.c). It calls no function of the scheduler: the
 * schedulers on a fake clock register their calls with it, and a timer brings the calls
 * of the scheduler it runs on. */
#include "dl_assert.h"
#include "internal.h"
#include "scheduler.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum clock_kind { CLOCK_KIND_SYSTEM, CLOCK_KIND_FAKE, CLOCK_KIND_CUSTOM };

/* A wait blocked on a fake clock. Lives on the waiting thread's stack. */
typedef struct fwaiter {
    struct fwaiter *next, *prev;
    ddb_clock *clock;
    int64_t deadline_mono_ns;
    bool released; /* woken by an advance (or by a set made during one): counted in pending */
} fwaiter;

typedef struct ctimer {
    ddb__task task; /* system and custom clocks: a task of the clock's scheduler */
    ddb_clock *clock;
    struct ctimer *next;
    long id;
    int64_t deadline_mono_ns;
    ddb_cancel *cancel; /* weak: see ddb__cancel_try_ref */
} ctimer;

struct ddb_clock {
    int refs; /* __atomic */
    enum clock_kind kind;
    uint64_t uid; /* never reused, unlike addresses: names the clock in thread-locals */
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* fake: time moved or a cancel was set */
    pthread_cond_t state_cv; /* fake: pending or n_waiters changed (CLOCK_MONOTONIC) */
    /* fake clocks */
    int64_t mono_ns, wall_ms;
    fwaiter *waiters;
    int n_waiters;
    struct caller *callers; /* threads in a hold on this clock */
    int pending; /* threads released by an advance, not yet waiting again nor idle */
    /* custom clocks */
    ddb_clock_ops ops;
    void *arg;
    /* timers (ddb_cancel_after), sorted by deadline */
    ctimer *timers;
    long next_timer_id;
    ddb__sched *tsched; /* system and custom clocks: fires the timers; made when needed */
    const ddb__timer_sched_ops *tops; /* the calls that made tsched, to use and free it */
    /* fake clocks: the schedulers that run on it (woken by advances, waited for by
     * settle), guarded by smu, which is never taken inside mu */
    pthread_mutex_t smu;
    ddb__sched **scheds;
    size_t n_scheds, cap_scheds;
    const ddb__sched_hooks *hooks; /* the calls the schedulers registered (all the same) */
};

static uint64_t g_next_uid = 1; /* __atomic */

static ddb_clock g_system = {
    .refs = 1,
    .kind = CLOCK_KIND_SYSTEM,
    .uid = 0,
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .smu = PTHREAD_MUTEX_INITIALIZER,
};

/* ---- thread-local bookkeeping for ddb_fake_clock_settle */

#define RELEASED_MAX 8
static _Thread_local uint64_t tl_released[RELEASED_MAX]; /* uids of clocks that released us */
static _Thread_local int tl_n_released;
static _Thread_local uint64_t tl_advancing; /* uid of the clock this thread advances now */
static _Thread_local uint64_t tl_drives;    /* uid of the clock whose scheduler this thread runs */
/* A thread inside a library call that makes several requests and waits on the clock
 * between them (an acquire, an election): it is busy for settle except while it waits
 * on the clock with a deadline not yet due. */
typedef struct caller {
    ddb_clock *clock;   /* the clock it is registered with, NULL when none */
    int depth;          /* nested holds */
    bool parked;
    int64_t deadline_mono_ns;
    struct caller *next, *prev;
} caller;
static _Thread_local caller tl_caller;

static bool tl_has(uint64_t uid)
{
    for (int i = 0; i < tl_n_released; i++)
        if (tl_released[i] == uid)
            return true;
    return false;
}

static bool tl_take(uint64_t uid)
{
    for (int i = 0; i < tl_n_released; i++) {
        if (tl_released[i] == uid) {
            tl_released[i] = tl_released[--tl_n_released];
            return true;
        }
    }
    return false;
}

static void tl_add(uint64_t uid)
{
    if (tl_has(uid))
        return;
    if (tl_n_released < RELEASED_MAX)
        tl_released[tl_n_released++] = uid;
}

/* ---- helpers */

static int64_t ts_to_ns(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static struct timespec ns_to_ts(int64_t ns)
{
    struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };
    return ts;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    return a + b;
}

static int64_t ms_to_ns(int64_t ms)
{
    if (ms > INT64_MAX / 1000000)
        return INT64_MAX;
    return ms * 1000000;
}

static void init_sync(ddb_clock *c)
{
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->smu, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &a);
    pthread_cond_init(&c->state_cv, &a);
    pthread_condattr_destroy(&a);
}

/* Waits on cv with a real-time deadline (CLOCK_MONOTONIC ns). ETIMEDOUT or 0. */
static int cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ns)
{
    struct timespec ts = ns_to_ts(deadline_ns);
    return pthread_cond_timedwait(cv, mu, &ts);
}

static int64_t real_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts_to_ns(&ts);
}

/* ---- construction */

ddb_clock *ddb_clock_system(void)
{
    return &g_system;
}

static ddb_clock *clock_alloc(enum clock_kind kind)
{
    ddb_clock *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->refs = 1;
    c->kind = kind;
    c->uid = __atomic_fetch_add(&g_next_uid, 1, __ATOMIC_RELAXED);
    init_sync(c);
    return c;
}

ddb_clock *ddb_fake_clock_new(int64_t wall_ms)
{
    ddb_clock *c = clock_alloc(CLOCK_KIND_FAKE);
    if (c)
        c->wall_ms = wall_ms;
    return c;
}

ddb_clock *ddb_clock_new_custom(const ddb_clock_ops *ops, void *arg)
{
    if (!ops || !ops->now_fn || !ops->wait_fn)
        return NULL;
    ddb_clock *c = clock_alloc(CLOCK_KIND_CUSTOM);
    if (!c)
        return NULL;
    c->ops = *ops;
    c->arg = arg;
    return c;
}

ddb_clock *ddb_clock_ref(ddb_clock *c)
{
    if (c && c->kind != CLOCK_KIND_SYSTEM)
        __atomic_fetch_add(&c->refs, 1, __ATOMIC_RELAXED);
    return c;
}

static void clock_destroy(ddb_clock *c)
{
    ctimer *t = c->timers;
    while (t) {
        ctimer *next = t->next;
        free(t);
        t = next;
    }
    if (c->kind == CLOCK_KIND_CUSTOM && c->ops.free_fn)
        c->ops.free_fn(c->arg);
    pthread_cond_destroy(&c->cv);
    pthread_cond_destroy(&c->state_cv);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->smu);
    free(c->scheds);
    free(c);
}

void ddb_clock_unref(ddb_clock *c)
{
    if (!c || c->kind == CLOCK_KIND_SYSTEM)
        return;
    if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    /* The timers' scheduler stops first. If a timer's token held the last reference and
     * was freed by that scheduler's own thread, the thread finishes on its own. */
    if (c->tsched)
        c->tops->free(c->tsched);
    clock_destroy(c);
}

/* The timers' scheduler of the system clock stops at exit. */
__attribute__((destructor)) static void system_clock_shutdown(void)
{
    pthread_mutex_lock(&g_system.mu);
    ddb__sched *s = g_system.tsched;
    const ddb__timer_sched_ops *ops = g_system.tops;
    g_system.tsched = NULL;
    pthread_mutex_unlock(&g_system.mu);
    if (s)
        ops->free(s);
}

/* ---- reading */

static void clock_now(ddb_clock *c, int64_t *mono_ns, int64_t *wall_ms)
{
    struct timespec ts;
    switch (c->kind) {
    case CLOCK_KIND_SYSTEM:
        if (mono_ns) {
            clock_gettime(CLOCK_MONOTONIC, &ts);
            *mono_ns = ts_to_ns(&ts);
        }
        if (wall_ms) {
            clock_gettime(CLOCK_REALTIME, &ts);
            *wall_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        }
        break;
    case CLOCK_KIND_FAKE:
        pthread_mutex_lock(&c->mu);
        if (mono_ns)
            *mono_ns = c->mono_ns;
        if (wall_ms)
            *wall_ms = c->wall_ms;
        pthread_mutex_unlock(&c->mu);
        break;
    case CLOCK_KIND_CUSTOM: {
        int64_t m = 0, w = 0;
        c->ops.now_fn(c->arg, &m, &w);
        if (mono_ns)
            *mono_ns = m;
        if (wall_ms)
            *wall_ms = w;
        break;
    }
    }
}

int64_t ddb_clock_mono_ns(ddb_clock *c)
{
    int64_t v = 0;
    clock_now(c ? c : &g_system, &v, NULL);
    return v;
}

int64_t ddb_clock_wall_ms(ddb_clock *c)
{
    int64_t v = 0;
    clock_now(c ? c : &g_system, NULL, &v);
    return v;
}

bool ddb_clock_is_fake(ddb_clock *c)
{
    return c && c->kind == CLOCK_KIND_FAKE;
}

/* ---- waiting */

static int system_wait_until(int64_t deadline, ddb_cancel *cancel)
{
    int fd = cancel ? ddb_cancel_fd(cancel) : -1;
    for (;;) {
        if (ddb_cancel_is_set(cancel))
            return DDB_ECANCELED;
        int64_t now = real_mono_ns();
        if (now >= deadline)
            return 0;
        if (fd >= 0) {
            struct pollfd p = { .fd = fd, .events = POLLIN };
            struct timespec left = ns_to_ts(deadline - now);
            ppoll(&p, 1, deadline == INT64_MAX ? NULL : &left, NULL);
        } else if (cancel) {
            /* No descriptor could be made for the token: look at it every 10 ms. */
            int64_t step = deadline - now < 10000000 ? deadline - now : 10000000;
            struct timespec ts = ns_to_ts(step);
            nanosleep(&ts, NULL);
        } else {
            struct timespec ts = ns_to_ts(deadline);
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        }
    }
}

static void fake_wake(void *arg)
{
    fwaiter *w = arg;
    ddb_clock *c = w->clock;
    pthread_mutex_lock(&c->mu);
    /* A set made by the advance itself, or by a thread the advance released, is part of
     * the work the advance released: the waiter it wakes counts for settle too. */
    if (!w->released && (tl_advancing == c->uid || tl_drives == c->uid || tl_has(c->uid))) {
        w->released = true;
        c->pending++;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void clear_released_locked(ddb_clock *c)
{
    if (tl_take(c->uid)) {
        c->pending--;
        pthread_cond_broadcast(&c->state_cv);
    }
}

static int fake_wait_until(ddb_clock *c, int64_t deadline, ddb_cancel *cancel)
{
    fwaiter w = { .clock = c, .deadline_mono_ns = deadline };
    /* A wait that returns at once does not block: a thread released by an advance is
     * still doing the advance's work, and stays counted for settle. */
    if (ddb_cancel_is_set(cancel))
        return DDB_ECANCELED;
    pthread_mutex_lock(&c->mu);
    bool due = c->mono_ns >= deadline;
    pthread_mutex_unlock(&c->mu);
    if (due)
        return 0;

    /* Registered before the wait becomes visible to advances (and to wait_for_waiters),
     * so that a cancel set by an advance's timer always finds fake_wake in place. */
    long reg = 0;
    if (cancel) {
        reg = ddb_cancel_on(cancel, fake_wake, &w);
        if (reg < 0)
            reg = 0; /* out of memory: the token is then seen on the next advance only */
    }
    pthread_mutex_lock(&c->mu);
    if (c->mono_ns < deadline && !ddb_cancel_is_set(cancel)) {
        /* This thread now blocks: whatever an advance released it for is done. */
        clear_released_locked(c);
        w.next = c->waiters;
        if (c->waiters)
            c->waiters->prev = &w;
        c->waiters = &w;
        c->n_waiters++;
        bool held = tl_caller.clock == c;
        if (held) {
            tl_caller.parked = true;
            tl_caller.deadline_mono_ns = deadline;
        }
        pthread_cond_broadcast(&c->state_cv);
        while (c->mono_ns < deadline && !ddb_cancel_is_set(cancel))
            pthread_cond_wait(&c->cv, &c->mu);
        if (held)
            tl_caller.parked = false;
        if (w.prev)
            w.prev->next = w.next;
        else
            c->waiters = w.next;
        if (w.next)
            w.next->prev = w.prev;
        c->n_waiters--;
        pthread_cond_broadcast(&c->state_cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (reg)
        ddb_cancel_off(cancel, reg); /* after this, fake_wake no longer touches w */

    pthread_mutex_lock(&c->mu);
    bool released = w.released;
    due = c->mono_ns >= deadline;
    pthread_mutex_unlock(&c->mu);
    if (released)
        tl_add(c->uid);
    if (ddb_cancel_is_set(cancel))
        return DDB_ECANCELED;
    return due ? 0 : DDB_ECANCELED;
}

int ddb__clock_wait_until(ddb_clock *c, int64_t deadline_mono_ns, ddb_cancel *cancel)
{
    if (!c)
        c = &g_system;
    switch (c->kind) {
    case CLOCK_KIND_FAKE:
        return fake_wait_until(c, deadline_mono_ns, cancel);
    case CLOCK_KIND_CUSTOM:
        if (ddb_cancel_is_set(cancel))
            return DDB_ECANCELED;
        return c->ops.wait_fn(c->arg, deadline_mono_ns, cancel);
    case CLOCK_KIND_SYSTEM:
    default:
        return system_wait_until(deadline_mono_ns, cancel);
    }
}

int ddb_clock_sleep(ddb_clock *c, int64_t timeout_ms, ddb_cancel *cancel)
{
    if (!c)
        c = &g_system;
    int64_t deadline;
    if (timeout_ms < 0) {
        if (!cancel)
            return DDB_EINVAL; /* would wait forever */
        deadline = INT64_MAX;
    } else {
        deadline = sat_add(ddb_clock_mono_ns(c), ms_to_ns(timeout_ms));
    }
    return ddb__clock_wait_until(c, deadline, cancel);
}

/* A hold: the thread is one of the clock's callers (busy for settle except while parked
 * on the clock) until the outermost unhold, which also marks it idle. */
static void clock_hold(ddb_clock *c)
{
    caller *me = &tl_caller;
    if (me->depth++ > 0 || !c || c->kind != CLOCK_KIND_FAKE)
        return;
    pthread_mutex_lock(&c->mu);
    me->clock = c;
    me->parked = false;
    me->prev = NULL;
    me->next = c->callers;
    if (c->callers)
        c->callers->prev = me;
    c->callers = me;
    pthread_mutex_unlock(&c->mu);
}

/* The end of a library call: marks the thread idle unless a hold is on. */
static void clock_call_done(ddb_clock *c)
{
    if (tl_caller.depth == 0)
        ddb__clock_thread_idle(c);
}

static void clock_unhold(ddb_clock *c)
{
    caller *me = &tl_caller;
    DL_ASSERT(me->depth > 0);
    if (me->depth > 0 && --me->depth == 0 && me->clock) {
        ddb_clock *hc = me->clock;
        pthread_mutex_lock(&hc->mu);
        if (me->prev)
            me->prev->next = me->next;
        else
            hc->callers = me->next;
        if (me->next)
            me->next->prev = me->prev;
        me->clock = NULL;
        pthread_cond_broadcast(&hc->state_cv);
        pthread_mutex_unlock(&hc->mu);
    }
    clock_call_done(c);
}

ddb__scope ddb__scope_hold(ddb_clock *c)
{
    clock_hold(c);
    return (ddb__scope){ .clock = c };
}

void ddb__scope_unhold(ddb__scope *s)
{
    clock_unhold(s->clock);
}

void ddb__scope_end(ddb__scope *s)
{
    clock_call_done(s->clock);
}

void ddb__clock_thread_idle(ddb_clock *c)
{
    if (!c || c->kind != CLOCK_KIND_FAKE || !tl_has(c->uid))
        return;
    pthread_mutex_lock(&c->mu);
    clear_released_locked(c);
    pthread_mutex_unlock(&c->mu);
}

/* ---- fake clock control */

/* Takes the timers due at now off the list; returns them (with a reference on each
 * token that is still alive) for firing outside the lock. */
static ctimer *take_due_locked(ddb_clock *c, int64_t now)
{
    ctimer *fire = NULL, **tail = &fire;
    while (c->timers && c->timers->deadline_mono_ns <= now) {
        ctimer *t = c->timers;
        c->timers = t->next;
        t->next = NULL;
        if (ddb__cancel_try_ref(t->cancel)) {
            *tail = t;
            tail = &t->next;
        } else {
            free(t);
        }
    }
    return fire;
}

static void fire_timers(ctimer *fire)
{
    while (fire) {
        ctimer *next = fire->next;
        ddb_cancel_set(fire->cancel);
        ddb_cancel_unref(fire->cancel);
        free(fire);
        fire = next;
    }
}

int ddb_fake_clock_advance(ddb_clock *c, int64_t ms)
{
    if (!c || c->kind != CLOCK_KIND_FAKE || ms < 0)
        return DDB_EINVAL;
    pthread_mutex_lock(&c->mu);
    c->mono_ns = sat_add(c->mono_ns, ms_to_ns(ms));
    c->wall_ms = sat_add(c->wall_ms, ms);
    for (fwaiter *w = c->waiters; w; w = w->next) {
        if (!w->released && w->deadline_mono_ns <= c->mono_ns) {
            w->released = true;
            c->pending++;
        }
    }
    ctimer *fire = take_due_locked(c, c->mono_ns);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (fire) {
        uint64_t prev = tl_advancing;
        tl_advancing = c->uid;
        fire_timers(fire);
        tl_advancing = prev;
    }
    pthread_mutex_lock(&c->smu);
    for (size_t i = 0; i < c->n_scheds; i++)
        c->hooks->wake(c->scheds[i]);
    pthread_mutex_unlock(&c->smu);
    return 0;
}

int ddb__fake_clock_jump_wall(ddb_clock *c, int64_t ms)
{
    if (!c || c->kind != CLOCK_KIND_FAKE)
        return DDB_EINVAL;
    pthread_mutex_lock(&c->mu);
    c->wall_ms = sat_add(c->wall_ms, ms);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

ddb__clock_kind ddb__clock_kind_of(const ddb_clock *c)
{
    if (!c || c->kind == CLOCK_KIND_SYSTEM)
        return DDB__CLOCK_SYSTEM;
    return c->kind == CLOCK_KIND_FAKE ? DDB__CLOCK_FAKE : DDB__CLOCK_CUSTOM;
}

void ddb__clock_add_sched(ddb_clock *c, ddb__sched *s, const ddb__sched_hooks *hooks)
{
    if (!c || c->kind != CLOCK_KIND_FAKE)
        return;
    pthread_mutex_lock(&c->smu);
    c->hooks = hooks;
    if (c->n_scheds == c->cap_scheds) {
        size_t cap = c->cap_scheds ? c->cap_scheds * 2 : 4;
        ddb__sched **v = realloc(c->scheds, cap * sizeof *v);
        if (!v) {
            /* Without a place in the list the scheduler is not woken by advances: its
             * tasks then run at its next wake. Out of memory only. */
            pthread_mutex_unlock(&c->smu);
            return;
        }
        c->scheds = v;
        c->cap_scheds = cap;
    }
    c->scheds[c->n_scheds++] = s;
    pthread_mutex_unlock(&c->smu);
}

void ddb__clock_remove_sched(ddb_clock *c, ddb__sched *s)
{
    if (!c || c->kind != CLOCK_KIND_FAKE)
        return;
    pthread_mutex_lock(&c->smu);
    for (size_t i = 0; i < c->n_scheds; i++) {
        if (c->scheds[i] == s) {
            c->scheds[i] = c->scheds[--c->n_scheds];
            break;
        }
    }
    pthread_mutex_unlock(&c->smu);
}

void ddb__clock_thread_drives(ddb_clock *c)
{
    tl_drives = c && c->kind == CLOCK_KIND_FAKE ? c->uid : 0;
}

/* Whether every thread in a hold on the clock waits on it for a deadline not yet due. */
static bool callers_parked_locked(ddb_clock *c)
{
    for (caller *k = c->callers; k; k = k->next)
        if (!k->parked || k->deadline_mono_ns <= c->mono_ns)
            return false;
    return true;
}

/* Waits (real time, until deadline) until no thread released by an advance is busy and
 * every thread in a hold is parked on the clock. */
static int settle_released(ddb_clock *c, int64_t deadline)
{
    pthread_mutex_lock(&c->mu);
    clear_released_locked(c); /* the caller is not doing released work */
    while (c->pending > 0 || !callers_parked_locked(c)) {
        if (cond_wait_until(&c->state_cv, &c->mu, deadline) == ETIMEDOUT &&
            (c->pending > 0 || !callers_parked_locked(c))) {
            pthread_mutex_unlock(&c->mu);
            return DDB_ETIMEDOUT;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return 0;
}

/* Waits (real time, until deadline) until every scheduler on the clock is quiet; sets
 * *all_quiet_at_once when each one was quiet at its first look. */
static int settle_scheds(ddb_clock *c, int64_t deadline, bool *all_quiet_at_once)
{
    *all_quiet_at_once = true;
    /* The list is copied and its schedulers pinned, so that no lock is held while they
     * are waited for: a scheduler's task may advance the clock itself. */
    pthread_mutex_lock(&c->smu);
    size_t n = c->n_scheds;
    ddb__sched **v = n ? malloc(n * sizeof *v) : NULL;
    if (n && !v) {
        pthread_mutex_unlock(&c->smu);
        return DDB_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        v[i] = c->scheds[i];
        c->hooks->pin(v[i]);
    }
    const ddb__sched_hooks *hooks = c->hooks;
    pthread_mutex_unlock(&c->smu);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && !hooks->quiet(v[i])) {
            *all_quiet_at_once = false;
            rc = hooks->wait_quiet(v[i], deadline);
        }
        hooks->unpin(v[i]);
    }
    free(v);
    return rc;
}

int ddb_fake_clock_settle(ddb_clock *c, int64_t real_timeout_ms)
{
    if (!c || c->kind != CLOCK_KIND_FAKE)
        return DDB_EINVAL;
    int64_t deadline = sat_add(real_mono_ns(), ms_to_ns(real_timeout_ms < 0 ? 0 : real_timeout_ms));
    /* Schedulers' tasks may release waiting threads, and released threads may give the
     * schedulers work: settled is when both are quiet at once. */
    for (;;) {
        int rc = settle_released(c, deadline);
        if (rc != 0)
            return rc;
        bool quiet_at_once;
        rc = settle_scheds(c, deadline, &quiet_at_once);
        if (rc != 0)
            return rc;
        pthread_mutex_lock(&c->mu);
        bool released_quiet = c->pending == 0 && callers_parked_locked(c);
        pthread_mutex_unlock(&c->mu);
        if (released_quiet && quiet_at_once)
            return 0;
    }
}

int ddb__fake_clock_settle_schedulers(ddb_clock *c, int64_t real_timeout_ms)
{
    if (!c || c->kind != CLOCK_KIND_FAKE)
        return DDB_EINVAL;
    int64_t deadline = sat_add(real_mono_ns(), ms_to_ns(real_timeout_ms < 0 ? 0 : real_timeout_ms));
    for (;;) {
        bool quiet_at_once;
        int rc = settle_scheds(c, deadline, &quiet_at_once);
        if (rc != 0 || quiet_at_once)
            return rc;
    }
}

int ddb_fake_clock_wait_for_waiters(ddb_clock *c, int n, int64_t real_timeout_ms)
{
    if (!c || c->kind != CLOCK_KIND_FAKE)
        return DDB_EINVAL;
    int64_t deadline = sat_add(real_mono_ns(), ms_to_ns(real_timeout_ms < 0 ? 0 : real_timeout_ms));
    pthread_mutex_lock(&c->mu);
    while (c->n_waiters < n) {
        if (cond_wait_until(&c->state_cv, &c->mu, deadline) == ETIMEDOUT && c->n_waiters < n) {
            pthread_mutex_unlock(&c->mu);
            return DDB_ETIMEDOUT;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int ddb_fake_clock_waiters(ddb_clock *c)
{
    if (!c || c->kind != CLOCK_KIND_FAKE)
        return 0;
    pthread_mutex_lock(&c->mu);
    int n = c->n_waiters;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---- timers */

/* A timer of a system or custom clock is due: the scheduler's thread sets its token. The
 * timer is the task's as long as it is on the clock's list; once off it, it belongs to
 * whoever took it off. */
static void timer_fire(void *arg)
{
    ctimer *t = arg;
    ddb_clock *c = t->clock;
    pthread_mutex_lock(&c->mu);
    bool mine = false;
    for (ctimer **pp = &c->timers; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            mine = true;
            break;
        }
    }
    bool alive = mine && ddb__cancel_try_ref(t->cancel);
    pthread_mutex_unlock(&c->mu);
    if (!mine)
        return; /* ddb__clock_timer_remove took it and frees it */
    if (alive) {
        ddb_cancel_set(t->cancel);
        ddb_cancel_unref(t->cancel);
    }
    free(t);
}

long ddb__clock_timer_add(ddb_clock *c, int64_t deadline_mono_ns, ddb_cancel *cancel,
                          const ddb__timer_sched_ops *ops)
{
    if (!c)
        c = &g_system;
    if (deadline_mono_ns <= ddb_clock_mono_ns(c))
        return 0;
    ctimer *t = calloc(1, sizeof *t);
    if (!t)
        return DDB_ENOMEM;
    t->deadline_mono_ns = deadline_mono_ns;
    t->cancel = cancel;
    t->clock = c;
    t->task = (ddb__task){ .fn = timer_fire, .arg = t };
    pthread_mutex_lock(&c->mu);
    if (c->kind == CLOCK_KIND_FAKE && c->mono_ns >= deadline_mono_ns) {
        pthread_mutex_unlock(&c->mu);
        free(t);
        return 0;
    }
    if (c->kind != CLOCK_KIND_FAKE && !c->tsched) {
        c->tsched = ops->make(c);
        c->tops = ops;
        if (!c->tsched) {
            pthread_mutex_unlock(&c->mu);
            free(t);
            return DDB_ENOMEM;
        }
    }
    t->id = ++c->next_timer_id;
    ctimer **pp = &c->timers;
    while (*pp && (*pp)->deadline_mono_ns <= deadline_mono_ns)
        pp = &(*pp)->next;
    t->next = *pp;
    *pp = t;
    long id = t->id;
    /* Queued under the clock's mutex, so that a remove cannot free it first; the
     * scheduler never takes the clock's mutex inside its own. */
    if (c->kind != CLOCK_KIND_FAKE && c->tops->at(c->tsched, &t->task, deadline_mono_ns) != 0) {
        *pp = t->next;
        pthread_mutex_unlock(&c->mu);
        free(t);
        return DDB_ENOMEM;
    }
    pthread_mutex_unlock(&c->mu);
    return id;
}

void ddb__clock_timer_remove(ddb_clock *c, long id)
{
    if (!c)
        c = &g_system;
    ctimer *t = NULL;
    pthread_mutex_lock(&c->mu);
    for (ctimer **pp = &c->timers; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            t = *pp;
            *pp = t->next;
            break;
        }
    }
    ddb__sched *s = c->tsched;
    const ddb__timer_sched_ops *ops = c->tops;
    pthread_mutex_unlock(&c->mu);
    if (!t)
        return;
    /* Off the list, it is ours: take it off the scheduler too (a run that has begun
     * finds it gone and leaves it alone; the cancel waits for that run). */
    if (s)
        ops->cancel(s, &t->task);
    free(t);
}
