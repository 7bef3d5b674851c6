/* scheduler.c: the scheduler that owns a client's background time: a heap of timed tasks on
 * the client's clock, one worker thread, and an eventfd that wakes it. It knows nothing
 * of leases or requests: an optional I/O source (the client's asynchronous HTTP) is
 * polled by the same thread, so timers and transfers share one loop and none blocks
 * another. A fake clock wakes its schedulers when it is advanced and asks them whether
 * they are quiet when a test settles it. */
#include "scheduler.h"
#include "dl_assert.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

struct ddb__sched {
    ddb_clock *clock;             /* referenced, unless weak_clock */
    bool weak_clock;              /* the clock's own timers: the clock owns the scheduler */
    bool self_free;               /* freed on its own thread: the worker frees it last */
    const ddb__sched_io *io;      /* NULL: timers only */
    void *io_arg;
    int wake_fd;                  /* eventfd: written to cut the worker's wait short */

    pthread_mutex_t mu;
    pthread_cond_t cv;            /* a task ended, the worker parked, or it stopped */
    ddb__task **heap;
    size_t n, cap;
    pthread_t thread;
    bool started, stopping;
    bool parked;                  /* the worker waits (or is about to) */
    bool wake_pending;            /* wake_fd written and not yet drained */
    ddb__task *running;           /* the task whose fn runs now */
    int pins;                     /* a settle looks at it: the free waits */

    /* Custom clocks only: a thread that waits on the clock for the worker, since a
     * custom clock's wait cannot be polled together with descriptors. */
    pthread_t waiter;
    bool waiter_started;
    int64_t waiter_deadline;      /* mono ns the waiter waits for (INT64_MAX: none) */
    ddb_cancel *waiter_cut;       /* set to make the waiter look at its deadline again */
};

static atomic_int g_workers;
static _Thread_local ddb__sched *tl_worker; /* the scheduler whose worker this thread is */

/* ------------------------------------------------------------------- heap */

static void place(ddb__sched *s, size_t i, ddb__task *t)
{
    DL_ASSERT(i < s->n);
    s->heap[i] = t;
    t->index = i;
}

static void sift_up(ddb__sched *s, size_t i)
{
    ddb__task *x = s->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (s->heap[p]->due_ns <= x->due_ns)
            break;
        place(s, i, s->heap[p]);
        i = p;
    }
    place(s, i, x);
    DL_ASSERT(i == 0 || s->heap[(i - 1) / 2]->due_ns <= x->due_ns);
}

static void sift_down(ddb__sched *s, size_t i)
{
    ddb__task *x = s->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->n)
            break;
        if (c + 1 < s->n && s->heap[c + 1]->due_ns < s->heap[c]->due_ns)
            c++;
        if (x->due_ns <= s->heap[c]->due_ns)
            break;
        place(s, i, s->heap[c]);
        i = c;
    }
    place(s, i, x);
    DL_ASSERT(2 * i + 1 >= s->n || x->due_ns <= s->heap[2 * i + 1]->due_ns);
    DL_ASSERT(2 * i + 2 >= s->n || x->due_ns <= s->heap[2 * i + 2]->due_ns);
}

static void heap_remove(ddb__sched *s, ddb__task *t)
{
    size_t i = t->index;
    DL_ASSERT(t->queued && i < s->n && s->heap[i] == t);
    t->queued = false;
    s->n--;
    if (i == s->n)
        return;
    ddb__task *moved = s->heap[s->n];
    place(s, i, moved);
    sift_down(s, i);
    sift_up(s, moved->index);
}

/* ------------------------------------------------------------------ wake */

static void wake_locked(ddb__sched *s)
{
    if (s->wake_pending)
        return;
    s->wake_pending = true;
    uint64_t one = 1;
    ssize_t w = write(s->wake_fd, &one, sizeof one);
    (void)w; /* the counter cannot overflow: it is drained on every pass */
}

void ddb__sched_wake(ddb__sched *s)
{
    pthread_mutex_lock(&s->mu);
    wake_locked(s);
    pthread_mutex_unlock(&s->mu);
}

static void drain_locked(ddb__sched *s)
{
    if (!s->wake_pending)
        return;
    uint64_t v;
    ssize_t r = read(s->wake_fd, &v, sizeof v);
    (void)r;
    s->wake_pending = false;
}

/* ---------------------------------------------------------- custom clocks */

static void *waiter_main(void *arg)
{
    ddb__sched *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        if (s->waiter_deadline == INT64_MAX) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        int64_t deadline = s->waiter_deadline;
        ddb_cancel *cut = ddb_cancel_new();
        ddb_cancel_unref(s->waiter_cut);
        s->waiter_cut = ddb_cancel_ref(cut);
        pthread_mutex_unlock(&s->mu);
        int rc = cut ? ddb__clock_wait_until(s->clock, deadline, cut) : DDB_ENOMEM;
        ddb_cancel_unref(cut);
        pthread_mutex_lock(&s->mu);
        if (rc == 0 || rc == DDB_ENOMEM) {
            /* Due (or no memory to wait well): the worker looks at its heap again and
             * names the next deadline when it parks. */
            if (s->waiter_deadline == deadline)
                s->waiter_deadline = INT64_MAX;
            wake_locked(s);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Points the custom clock's waiter at `deadline`. Called with s->mu held; returns the
 * token to set once the mutex is released (the waiter waits for an older deadline). */
static ddb_cancel *waiter_set_locked(ddb__sched *s, int64_t deadline)
{
    if (deadline == s->waiter_deadline)
        return NULL;
    s->waiter_deadline = deadline;
    pthread_cond_broadcast(&s->cv);
    return s->waiter_cut ? ddb_cancel_ref(s->waiter_cut) : NULL;
}

/* ------------------------------------------------------------------ worker */

static int64_t real_timeout_ms(ddb__sched *s, int64_t now, int64_t due)
{
    if (due == INT64_MAX)
        return -1;
    switch (ddb__clock_kind_of(s->clock)) {
    case DDB__CLOCK_SYSTEM: {
        int64_t left = due - now;
        if (left <= 0)
            return 0;
        int64_t ms = (left + 999999) / 1000000;
        return ms > 3600000 ? 3600000 : ms;
    }
    case DDB__CLOCK_FAKE:
    case DDB__CLOCK_CUSTOM:
    default:
        return -1; /* woken by an advance, or by the custom clock's waiter */
    }
}

static void destroy(ddb__sched *s);

static void *worker_main(void *arg)
{
    ddb__sched *s = arg;
    tl_worker = s;
    /* Tokens this thread sets while it works for the clock wake waiters that settle
     * must count: the worker drives the clock's work, as an advance does. */
    ddb__clock_thread_drives(s->clock);
    atomic_fetch_add(&g_workers, 1);
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        pthread_mutex_unlock(&s->mu);
        int64_t now = ddb_clock_mono_ns(s->clock);
        pthread_mutex_lock(&s->mu);
        if (s->n > 0 && s->heap[0]->due_ns <= now) {
            ddb__task *t = s->heap[0];
            heap_remove(s, t);
            s->running = t;
            pthread_mutex_unlock(&s->mu);
            t->fn(t->arg);
            pthread_mutex_lock(&s->mu);
            s->running = NULL;
            pthread_cond_broadcast(&s->cv);
            continue;
        }
        int64_t due = s->n > 0 ? s->heap[0]->due_ns : INT64_MAX;
        ddb_cancel *cut = NULL;
        if (ddb__clock_kind_of(s->clock) == DDB__CLOCK_CUSTOM)
            cut = waiter_set_locked(s, due);
        int64_t timeout = real_timeout_ms(s, now, due);
        s->parked = true;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        if (cut) {
            ddb_cancel_set(cut);
            ddb_cancel_unref(cut);
        }
        if (s->io) {
            s->io->wait(s->io_arg, s->wake_fd, timeout);
        } else {
            struct pollfd p = { .fd = s->wake_fd, .events = POLLIN };
            poll(&p, 1, timeout > INT32_MAX ? INT32_MAX : (int)timeout);
        }
        pthread_mutex_lock(&s->mu);
        drain_locked(s);
        s->parked = false;
        if (s->io) {
            pthread_mutex_unlock(&s->mu);
            s->io->run(s->io_arg);
            pthread_mutex_lock(&s->mu);
        }
    }
    s->parked = false;
    bool self_free = s->self_free;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    atomic_fetch_sub(&g_workers, 1);
    if (self_free)
        destroy(s);
    return NULL;
}

static int start_locked(ddb__sched *s)
{
    if (s->started)
        return 0;
    /* The library's threads take no signals: the process's handlers run elsewhere. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, worker_main, s);
    if (rc == 0 && ddb__clock_kind_of(s->clock) == DDB__CLOCK_CUSTOM) {
        s->waiter_deadline = INT64_MAX;
        if (pthread_create(&s->waiter, NULL, waiter_main, s) == 0)
            s->waiter_started = true;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return DDB_ENOMEM;
    s->started = true;
    return 0;
}

/* ------------------------------------------------------------------ public */

/* What a fake clock calls on the schedulers that run on it (ddb__clock_add_sched). */
static const ddb__sched_hooks k_clock_hooks = {
    .wake = ddb__sched_wake,
    .pin = ddb__sched_pin,
    .unpin = ddb__sched_unpin,
    .quiet = ddb__sched_quiet,
    .wait_quiet = ddb__sched_wait_quiet,
};

static ddb__sched *sched_make(ddb_clock *clock, bool weak, const ddb__sched_io *io,
                              void *io_arg, ddb_error *err)
{
    ddb__sched *s = calloc(1, sizeof *s);
    if (!s) {
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->wake_fd < 0) {
        free(s);
        ddb__fail(err, DDB_EIO, "could not make an eventfd for the scheduler: %s",
                  strerror(errno));
        return NULL;
    }
    if (!clock)
        clock = ddb_clock_system();
    s->weak_clock = weak;
    s->clock = weak ? clock : ddb_clock_ref(clock);
    s->io = io;
    s->io_arg = io_arg;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (!weak)
        ddb__clock_add_sched(s->clock, s, &k_clock_hooks);
    return s;
}

ddb__sched *ddb__sched_new(ddb_clock *clock, const ddb__sched_io *io, void *io_arg,
                           ddb_error *err)
{
    return sched_make(clock, false, io, io_arg, err);
}

ddb__sched *ddb__sched_new_timers(ddb_clock *clock)
{
    return sched_make(clock, true, NULL, NULL, NULL);
}

void ddb__sched_pin(ddb__sched *s)
{
    pthread_mutex_lock(&s->mu);
    s->pins++;
    pthread_mutex_unlock(&s->mu);
}

void ddb__sched_unpin(ddb__sched *s)
{
    pthread_mutex_lock(&s->mu);
    s->pins--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void destroy(ddb__sched *s)
{
    for (size_t i = 0; i < s->n; i++)
        s->heap[i]->queued = false;
    ddb_cancel_unref(s->waiter_cut);
    close(s->wake_fd);
    if (!s->weak_clock)
        ddb_clock_unref(s->clock);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->heap);
    free(s);
}

void ddb__sched_free(ddb__sched *s)
{
    if (!s)
        return;
    if (!s->weak_clock)
        ddb__clock_remove_sched(s->clock, s);
    pthread_mutex_lock(&s->mu);
    while (s->pins > 0)
        pthread_cond_wait(&s->cv, &s->mu);
    s->stopping = true;
    bool self = tl_worker == s;
    s->self_free = self;
    wake_locked(s);
    pthread_cond_broadcast(&s->cv);
    bool started = s->started, waiter = s->waiter_started;
    pthread_mutex_unlock(&s->mu);
    if (waiter) {
        pthread_mutex_lock(&s->mu);
        ddb_cancel *cut = s->waiter_cut ? ddb_cancel_ref(s->waiter_cut) : NULL;
        pthread_mutex_unlock(&s->mu);
        ddb_cancel_set(cut);
        ddb_cancel_unref(cut);
        pthread_join(s->waiter, NULL);
    }
    if (self) {
        pthread_detach(s->thread); /* it frees the scheduler when its task returns */
        return;
    }
    if (started)
        pthread_join(s->thread, NULL);
    destroy(s);
}

int ddb__sched_at(ddb__sched *s, ddb__task *t, int64_t due_ns)
{
    pthread_mutex_lock(&s->mu);
    int rc = start_locked(s);
    if (rc != 0) {
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    bool sooner = s->n == 0 || due_ns < s->heap[0]->due_ns;
    if (t->queued) {
        t->due_ns = due_ns;
        sift_up(s, t->index);
        sift_down(s, t->index);
    } else {
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 64;
            ddb__task **h = realloc(s->heap, cap * sizeof *h);
            if (!h) {
                pthread_mutex_unlock(&s->mu);
                return DDB_ENOMEM;
            }
            s->heap = h;
            s->cap = cap;
        }
        t->due_ns = due_ns;
        t->queued = true;
        place(s, s->n++, t);
        sift_up(s, s->n - 1);
    }
    /* The worker waits for an older, later deadline: cut its wait short. It looks at the
     * heap again before it parks, so a worker that is busy needs no wake. */
    if (sooner && tl_worker != s)
        wake_locked(s);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

bool ddb__sched_cancel(ddb__sched *s, ddb__task *t)
{
    pthread_mutex_lock(&s->mu);
    bool was_queued = t->queued;
    if (t->queued)
        heap_remove(s, t);
    /* On another thread: wait until a run of it that has begun is over. */
    if (tl_worker != s)
        while (s->running == t)
            pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    return was_queued;
}

bool ddb__sched_quiet(ddb__sched *s)
{
    /* The clock is read before the mutex: the clock's own lock is never taken inside. */
    int64_t now = ddb_clock_mono_ns(s->clock);
    pthread_mutex_lock(&s->mu);
    bool quiet = !s->started || s->stopping ||
                 (s->parked && !s->wake_pending && !s->running &&
                  (s->n == 0 || s->heap[0]->due_ns > now) &&
                  (!s->io || s->io->busy(s->io_arg) == 0));
    pthread_mutex_unlock(&s->mu);
    return quiet;
}

int ddb__sched_wait_quiet(ddb__sched *s, int64_t real_deadline_ns)
{
    for (;;) {
        if (ddb__sched_quiet(s))
            return 0;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
        if (now_ns >= real_deadline_ns)
            return DDB_ETIMEDOUT;
        /* The worker broadcasts whenever it parks or a task ends; a transfer that ends
         * makes it run again and park again, so a bounded wait on cv sees every change. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t step = real_deadline_ns - now_ns;
        if (step > 100000000)
            step = 100000000;
        ts.tv_nsec += step % 1000000000;
        ts.tv_sec += step / 1000000000 + ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_mutex_lock(&s->mu);
        if (!s->parked || s->running || s->wake_pending)
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        pthread_mutex_unlock(&s->mu);
        if (ddb__sched_quiet(s))
            return 0;
        /* Parked but not quiet: a task is due at the clock's now (an advance is waking it)
         * or a transfer is in flight. Wait for the worker to move. */
        pthread_mutex_lock(&s->mu);
        if (s->parked)
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        pthread_mutex_unlock(&s->mu);
    }
}

int ddb__sched_workers(void)
{
    return atomic_load(&g_workers);
}
