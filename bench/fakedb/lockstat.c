/* lockstat.c: an LD_PRELOAD shim that times every pthread mutex of the process it is
 * loaded into: how long threads wait to take each one and how long they hold it. Used
 * to find where fakedb's latency tail comes from without changing fakedb (issue 26).
 * At exit it prints, per mutex taken more than 1,000 times,
 * the count and the p50/p99/p99.9/max of wait and hold times to stderr.
 * Usage: LD_PRELOAD=bench_lockstat.so fakedb ...   (hold times need lock and unlock by
 * the same thread, as pthread's default mutexes are used) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 256           /* mutexes tracked (open addressing on the address) */
#define BUCKETS 64          /* log2 histogram of nanoseconds */
#define HELD_MAX 16         /* mutexes one thread may hold at once */

typedef struct slot {
    _Atomic(uintptr_t) addr;
    atomic_ulong count;
    atomic_ulong wait[BUCKETS], hold[BUCKETS];
} slot;

static slot slots[SLOTS];
static int (*real_lock)(pthread_mutex_t *);
static int (*real_unlock)(pthread_mutex_t *);

static __thread struct {
    pthread_mutex_t *m;
    int64_t since;
} held[HELD_MAX];
static __thread int n_held;
static __thread int inside; /* no recursion through clock_gettime or dlsym */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int bucket(int64_t ns)
{
    int b = 0;
    while (ns > 1 && b < BUCKETS - 1) {
        ns >>= 1;
        b++;
    }
    return b;
}

static slot *slot_of(pthread_mutex_t *m)
{
    uintptr_t a = (uintptr_t)m;
    for (size_t i = 0, h = (a >> 4) % SLOTS; i < SLOTS; i++, h = (h + 1) % SLOTS) {
        uintptr_t cur = atomic_load(&slots[h].addr);
        if (cur == a)
            return &slots[h];
        if (cur == 0) {
            uintptr_t zero = 0;
            if (atomic_compare_exchange_strong(&slots[h].addr, &zero, a) || zero == a)
                return &slots[h];
        }
    }
    return NULL;
}

static void resolve(void)
{
    if (!real_lock) {
        /* POSIX's way to take a function from dlsym's object pointer */
        void *l = dlsym(RTLD_NEXT, "pthread_mutex_lock"), *u = dlsym(RTLD_NEXT, "pthread_mutex_unlock");
        memcpy(&real_lock, &l, sizeof l);
        memcpy(&real_unlock, &u, sizeof u);
    }
}

__attribute__((visibility("default"))) int pthread_mutex_lock(pthread_mutex_t *m)
{
    resolve();
    if (inside)
        return real_lock(m);
    inside = 1;
    int64_t t0 = now_ns();
    int rc = real_lock(m);
    int64_t t1 = now_ns();
    slot *s = slot_of(m);
    if (s) {
        atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->wait[bucket(t1 - t0)], 1, memory_order_relaxed);
    }
    if (n_held < HELD_MAX) {
        held[n_held].m = m;
        held[n_held].since = t1;
        n_held++;
    }
    inside = 0;
    return rc;
}

__attribute__((visibility("default"))) int pthread_mutex_unlock(pthread_mutex_t *m)
{
    resolve();
    if (!inside) {
        inside = 1;
        for (int i = n_held - 1; i >= 0; i--) {
            if (held[i].m != m)
                continue;
            slot *s = slot_of(m);
            if (s)
                atomic_fetch_add_explicit(&s->hold[bucket(now_ns() - held[i].since)], 1, memory_order_relaxed);
            held[i] = held[--n_held];
            break;
        }
        inside = 0;
    }
    return real_unlock(m);
}

/* The upper bound (us) of the bucket holding quantile q of a histogram. */
static double quantile(atomic_ulong *h, double q)
{
    unsigned long total = 0, seen = 0;
    for (int b = 0; b < BUCKETS; b++)
        total += atomic_load(&h[b]);
    for (int b = 0; b < BUCKETS; b++) {
        seen += atomic_load(&h[b]);
        if (total && (double)seen >= q * (double)total)
            return (double)(1ULL << (b + 1)) / 1000.0;
    }
    return 0;
}

__attribute__((destructor)) static void report(void)
{
    inside = 1;
    fprintf(stderr, "lockstat: mutex count | wait p50 p99 p99.9 max (us, <=) | hold p50 p99 p99.9 max\n");
    for (int i = 0; i < SLOTS; i++) {
        slot *s = &slots[i];
        unsigned long n = atomic_load(&s->count);
        if (n < 1000)
            continue;
        fprintf(stderr, "lockstat: %#lx %lu | %.0f %.0f %.0f %.0f | %.0f %.0f %.0f %.0f\n",
                (unsigned long)atomic_load(&s->addr), n, quantile(s->wait, 0.5), quantile(s->wait, 0.99),
                quantile(s->wait, 0.999), quantile(s->wait, 1.0), quantile(s->hold, 0.5),
                quantile(s->hold, 0.99), quantile(s->hold, 0.999), quantile(s->hold, 1.0));
    }
}
