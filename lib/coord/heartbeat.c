/* heartbeat.c: the scheduler that renews the leases of a client -- one thread per
 * client, however many leases it holds, with a timer heap ordered by when each lease is
 * due. It waits on the client's clock, so a fake clock drives it, and is woken through
 * a cancel token when a lease is due sooner than the wait it is in. */
#include "coord_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct dl_sched {
    ddb_client *client;
    ddb_clock *clock;
    int refs;                  /* guarded by registry_mu */
    dl_sched *next;            /* the registry's list */

    pthread_mutex_t mu;
    pthread_cond_t cond;       /* state changed: a lease done, the thread waits again */
    ddb_lease **heap;
    size_t n, cap;
    pthread_t thread;
    bool started;
    bool stopping;
    ddb_cancel *wake;          /* set to cut the scheduler's wait short; then replaced */
    bool waiting;              /* the thread waits on the clock (or is about to) */
    int64_t wait_deadline_ns;
    ddb_lease *in_flight;      /* the lease being renewed now */
    /* The cancel token of the renewal on its way, shared by all leases so that a lease
     * does not need a descriptor of its own: set to abort it (a release), then replaced. */
    ddb_cancel *abort;
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static dl_sched *registry;
static atomic_int threads_running;

/* ------------------------------------------------------------------- heap */

static bool before(const ddb_lease *a, const ddb_lease *b)
{
    return a->due_ns < b->due_ns;
}

static void heap_place(dl_sched *s, size_t i, ddb_lease *lease)
{
    s->heap[i] = lease;
    lease->heap_index = i;
}

static void sift_up(dl_sched *s, size_t i)
{
    ddb_lease *x = s->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(x, s->heap[p]))
            break;
        heap_place(s, i, s->heap[p]);
        i = p;
    }
    heap_place(s, i, x);
}

static void sift_down(dl_sched *s, size_t i)
{
    ddb_lease *x = s->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->n)
            break;
        if (c + 1 < s->n && before(s->heap[c + 1], s->heap[c]))
            c++;
        if (!before(s->heap[c], x))
            break;
        heap_place(s, i, s->heap[c]);
        i = c;
    }
    heap_place(s, i, x);
}

static int heap_push(dl_sched *s, ddb_lease *lease)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        ddb_lease **h = realloc(s->heap, cap * sizeof *h);
        if (!h)
            return DDB_ENOMEM;
        s->heap = h;
        s->cap = cap;
    }
    lease->in_heap = true;
    heap_place(s, s->n++, lease);
    sift_up(s, s->n - 1);
    return 0;
}

static void heap_remove(dl_sched *s, ddb_lease *lease)
{
    size_t i = lease->heap_index;
    lease->in_heap = false;
    s->n--;
    if (i == s->n)
        return;
    ddb_lease *moved = s->heap[s->n];
    heap_place(s, i, moved);
    sift_down(s, i);
    sift_up(s, moved->heap_index);
}

static void heap_update(dl_sched *s, ddb_lease *lease)
{
    sift_up(s, lease->heap_index);
    sift_down(s, lease->heap_index);
}

/* ------------------------------------------------------------ one lease */

static int64_t lease_due(ddb_lease *lease)
{
    pthread_mutex_lock(&lease->mu);
    int64_t due = lease->next_attempt_ns < lease->expiry_ns ? lease->next_attempt_ns
                                                            : lease->expiry_ns;
    pthread_mutex_unlock(&lease->mu);
    return due;
}

/* Does what is due for a lease at `now`; returns when it is due next, or -1 when its
 * heartbeat is over (lost, or released). */
static int64_t lease_work(ddb_lease *lease, int64_t now, ddb_cancel *abort)
{
    if (ddb_cancel_is_set(lease->ended))
        return -1;
    pthread_mutex_lock(&lease->mu);
    int64_t expiry = lease->expiry_ns;
    int64_t next_attempt = lease->next_attempt_ns;
    pthread_mutex_unlock(&lease->mu);
    if (now >= expiry) {
        dl_lease_lose(lease, DDB_LOSS_EXPIRED);
        return -1;
    }
    if (now < next_attempt)
        return lease_due(lease); /* moved by a ddb_lease_renew */

    ddb_error e;
    ddb_error_clear(&e);
    int rc = dl_lease_renew_once(lease, abort, true, &e);
    if (rc == DDB_ELOST)
        return -1;
    if (rc == 0)
        return lease_due(lease);

    /* Tried again after 100 ms, twice as long each time, up to a sixth of the lease,
     * until one succeeds or the lease runs out. */
    int64_t after = ddb_clock_mono_ns(lease->clock);
    pthread_mutex_lock(&lease->mu);
    int64_t cap_ms = lease->lease_ms / 6;
    int64_t delay_ms = lease->retry_delay_ms ? lease->retry_delay_ms * 2 : 100;
    if (delay_ms > cap_ms)
        delay_ms = cap_ms;
    lease->retry_delay_ms = delay_ms;
    lease->next_attempt_ns = after + delay_ms * DL_NS_PER_MS;
    int64_t left_ms = (lease->expiry_ns - after) / DL_NS_PER_MS;
    pthread_mutex_unlock(&lease->mu);
    ddb_lock_table *l = atomic_load(&lease->locks);
    const char *table = ddb_table_name(lease->table);
    char wait[24], left[24];
    snprintf(wait, sizeof wait, "%" PRId64, delay_ms);
    snprintf(left, sizeof left, "%" PRId64, left_ms);
    dl_log(lease->client, DDB_LOG_WARN, 42,
           (const char *const[]){"lock", lease->name, "table", table, "error",
                                 dl_error_type(&e, rc), "message", e.message, "retry_in_ms",
                                 wait, "lease_left_ms", left, "holder",
                                 l ? l->holder_label : NULL, NULL},
           "A renewal of lock \"%s\" in table \"%s\" failed (%s); it is tried again in %s "
           "ms, until the lease runs out in %s ms.",
           lease->name, table, e.message, wait, left);
    return lease_due(lease);
}

/* --------------------------------------------------------------- thread */

static void *sched_main(void *arg)
{
    dl_sched *s = arg;
    atomic_fetch_add(&threads_running, 1);
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        int64_t now = ddb_clock_mono_ns(s->clock);
        if (s->n > 0 && s->heap[0]->due_ns <= now) {
            ddb_lease *lease = s->heap[0];
            heap_remove(s, lease);
            lease->in_flight = true;
            s->in_flight = lease;
            dl_lease_ref(lease);
            ddb_cancel *abort = ddb_cancel_ref(s->abort);
            pthread_mutex_unlock(&s->mu);
            int64_t next = lease_work(lease, now, abort);
            pthread_mutex_lock(&s->mu);
            lease->in_flight = false;
            s->in_flight = NULL;
            if (ddb_cancel_is_set(s->abort)) {
                ddb_cancel *fresh = ddb_cancel_new();
                if (fresh) {
                    ddb_cancel_unref(s->abort);
                    s->abort = fresh;
                }
            }
            ddb_cancel_unref(abort);
            if (!lease->removed && next >= 0) {
                lease->due_ns = next;
                if (heap_push(s, lease) != 0) {
                    /* No memory for the heap: the lease cannot be renewed. */
                    pthread_mutex_unlock(&s->mu);
                    dl_lease_lose(lease, DDB_LOSS_EXPIRED);
                    pthread_mutex_lock(&s->mu);
                }
            }
            pthread_cond_broadcast(&s->cond);
            pthread_mutex_unlock(&s->mu);
            dl_lease_unref(lease);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        int64_t deadline = s->n > 0 ? s->heap[0]->due_ns : INT64_MAX;
        ddb_cancel *wake = ddb_cancel_ref(s->wake);
        s->waiting = true;
        s->wait_deadline_ns = deadline;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->mu);
        ddb__clock_wait_until(s->clock, deadline, wake);
        pthread_mutex_lock(&s->mu);
        s->waiting = false;
        if (ddb_cancel_is_set(s->wake)) {
            ddb_cancel *fresh = ddb_cancel_new();
            if (fresh) {
                ddb_cancel_unref(s->wake);
                s->wake = fresh;
            }
        }
        ddb_cancel_unref(wake);
    }
    s->waiting = false;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    atomic_fetch_sub(&threads_running, 1);
    return NULL;
}

/* Cuts the scheduler's wait short when `due_ns` is sooner. Called with s->mu held;
 * returns the token to set once the mutex is released (or NULL). */
static ddb_cancel *wake_if_sooner(dl_sched *s, int64_t due_ns)
{
    if (s->waiting && due_ns < s->wait_deadline_ns && !ddb_cancel_is_set(s->wake))
        return ddb_cancel_ref(s->wake);
    return NULL;
}

static void wake_now(ddb_cancel *w)
{
    if (w) {
        ddb_cancel_set(w);
        ddb_cancel_unref(w);
    }
}

/* ------------------------------------------------------------- registry */

dl_sched *dl_sched_get(ddb_client *client, ddb_error *err)
{
    /* A fake clock's settle also waits for the heartbeats and contenders on it. */
    ddb__clock_set_settle_hook(ddb__heartbeat_settle);
    pthread_mutex_lock(&registry_mu);
    for (dl_sched *s = registry; s; s = s->next) {
        if (s->client == client) {
            s->refs++;
            pthread_mutex_unlock(&registry_mu);
            return s;
        }
    }
    dl_sched *s = calloc(1, sizeof *s);
    if (!s || !(s->wake = ddb_cancel_new()) || !(s->abort = ddb_cancel_new())) {
        if (s) {
            ddb_cancel_unref(s->wake);
            ddb_cancel_unref(s->abort);
        }
        free(s);
        pthread_mutex_unlock(&registry_mu);
        ddb__fail(err, DDB_ENOMEM, "Out of memory.");
        return NULL;
    }
    s->client = client;
    s->clock = ddb_clock_ref(ddb_client_clock(client));
    s->refs = 1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->next = registry;
    registry = s;
    pthread_mutex_unlock(&registry_mu);
    return s;
}

void dl_sched_put(dl_sched *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&registry_mu);
    if (--s->refs > 0) {
        pthread_mutex_unlock(&registry_mu);
        return;
    }
    for (dl_sched **p = &registry; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    pthread_mutex_unlock(&registry_mu);
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    ddb_cancel *w = ddb_cancel_ref(s->wake);
    ddb_cancel *a = ddb_cancel_ref(s->abort);
    bool started = s->started;
    pthread_mutex_unlock(&s->mu);
    wake_now(w);
    wake_now(a);
    if (started)
        pthread_join(s->thread, NULL);
    ddb_cancel_unref(s->wake);
    ddb_cancel_unref(s->abort);
    ddb_clock_unref(s->clock);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    free(s->heap);
    free(s);
}

int dl_sched_add(dl_sched *s, ddb_lease *lease, ddb_error *err)
{
    pthread_mutex_lock(&s->mu);
    if (!s->started) {
        if (pthread_create(&s->thread, NULL, sched_main, s) != 0) {
            pthread_mutex_unlock(&s->mu);
            return ddb__fail(err, DDB_ENOMEM, "Could not start the heartbeat thread.");
        }
        s->started = true;
    }
    lease->sched = s;
    lease->removed = false;
    lease->due_ns = lease_due(lease);
    if (heap_push(s, lease) != 0) {
        pthread_mutex_unlock(&s->mu);
        return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    }
    ddb_cancel *w = wake_if_sooner(s, lease->due_ns);
    pthread_mutex_unlock(&s->mu);
    wake_now(w);
    return 0;
}

void dl_sched_remove(dl_sched *s, ddb_lease *lease)
{
    pthread_mutex_lock(&s->mu);
    lease->removed = true;
    if (lease->in_heap)
        heap_remove(s, lease);
    if (lease->in_flight) {
        /* Its renewal is on its way: cut it short, and wait until it is done with. */
        ddb_cancel *a = ddb_cancel_ref(s->abort);
        pthread_mutex_unlock(&s->mu);
        wake_now(a);
        pthread_mutex_lock(&s->mu);
    }
    while (lease->in_flight)
        pthread_cond_wait(&s->cond, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

void dl_sched_reschedule(dl_sched *s, ddb_lease *lease)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    ddb_cancel *w = NULL;
    if (lease->in_heap) {
        lease->due_ns = lease_due(lease);
        heap_update(s, lease);
        w = wake_if_sooner(s, lease->due_ns);
    }
    pthread_mutex_unlock(&s->mu);
    wake_now(w);
}

/* ------------------------------------------------------ polls, for settle */

/* A thread of an acquire or an election that waits on the clock now and then. The fake
 * clock's own settle loses sight of such a thread once a request of the client returns
 * (the client marks the thread idle then), so the lock layer keeps its own account:
 * a registered thread is busy unless it is parked in a wait that is not yet due. */
static pthread_mutex_t pollers_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pollers_cv = PTHREAD_COND_INITIALIZER;
static dl_poller *pollers;

void dl_poller_begin(dl_poller *p, ddb_clock *clock)
{
    memset(p, 0, sizeof *p);
    p->clock = clock;
    pthread_mutex_lock(&pollers_mu);
    p->next = pollers;
    if (pollers)
        pollers->prev = p;
    pollers = p;
    pthread_mutex_unlock(&pollers_mu);
}

int dl_poller_wait(dl_poller *p, int64_t deadline_ns, ddb_cancel *stop)
{
    pthread_mutex_lock(&pollers_mu);
    p->parked = true;
    p->deadline_ns = deadline_ns;
    pthread_cond_broadcast(&pollers_cv);
    pthread_mutex_unlock(&pollers_mu);
    int rc = ddb__clock_wait_until(p->clock, deadline_ns, stop);
    pthread_mutex_lock(&pollers_mu);
    p->parked = false;
    pthread_mutex_unlock(&pollers_mu);
    return rc;
}

void dl_poller_end(dl_poller *p)
{
    pthread_mutex_lock(&pollers_mu);
    if (p->prev)
        p->prev->next = p->next;
    else if (pollers == p)
        pollers = p->next;
    if (p->next)
        p->next->prev = p->prev;
    pthread_cond_broadcast(&pollers_cv);
    pthread_mutex_unlock(&pollers_mu);
}

static bool pollers_settled(ddb_clock *clock)
{
    int64_t now = ddb_clock_mono_ns(clock);
    for (dl_poller *p = pollers; p; p = p->next)
        if (p->clock == clock && (!p->parked || p->deadline_ns <= now))
            return false;
    return true;
}

/* ---------------------------------------------------------------- tests */

static bool settled(dl_sched *s)
{
    if (!s->started || s->stopping)
        return true;
    if (!s->waiting || s->in_flight || ddb_cancel_is_set(s->wake))
        return false;
    int64_t now = ddb_clock_mono_ns(s->clock);
    if (s->n > 0 && s->heap[0]->due_ns <= now)
        return false;
    return s->wait_deadline_ns > now || s->n == 0;
}

int ddb__heartbeat_settle(ddb_clock *clock, int64_t real_timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += real_timeout_ms / 1000;
    deadline.tv_nsec += (real_timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    pthread_mutex_lock(&pollers_mu);
    while (!pollers_settled(clock)) {
        if (pthread_cond_timedwait(&pollers_cv, &pollers_mu, &deadline) != 0 &&
            !pollers_settled(clock)) {
            rc = DDB_ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&pollers_mu);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&registry_mu);
    for (dl_sched *s = registry; s && rc == 0; s = s->next) {
        if (s->clock != clock)
            continue;
        pthread_mutex_lock(&s->mu);
        while (!settled(s)) {
            if (pthread_cond_timedwait(&s->cond, &s->mu, &deadline) != 0 && !settled(s)) {
                rc = DDB_ETIMEDOUT;
                break;
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&registry_mu);
    return rc;
}

int ddb__heartbeat_threads(void)
{
    return atomic_load(&threads_running);
}
