/* coord_bench.c: what the lock layer costs. With a fake clock (exact, no waiting):
 * requests per acquire of a free lock, per poll of a waiting contender, and takeover
 * time against the lease. With the system clock: N leases held by one process against
 * an in-process fakedb, their renewal lag, threads, memory and CPU: as the server
 * answers, with every renewal delayed 10 ms (as against DynamoDB), and with the renewals
 * of 1% of the leases delayed 20 s (the others must not notice).
 *
 *   coord_bench [leases] [lease_ms] [run_ms]      (defaults 10000 30000 35000)
 *
 * With DYNALOCK_BENCH_OTLP_ENDPOINT=URL (and libddb_otel built), the clients' spans and
 * metrics also go to libddb_otel's exporter, sending to that collector: the bench with
 * the exporter on, against the same run without it.
 */
#include <dynalock/coord.h>
#include <fakedb/fakedb.h>

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "coord_internal.h"

#ifdef DYNALOCK_BENCH_OTEL
#include <dynalock/otel.h>
#endif

static fakedb *db;

static ddb_client *client_with(ddb_clock *clock, const ddb_telemetry *tel, int max_attempts)
{
    ddb_error err;
    ddb_client *c = ddb_client_new(&(ddb_client_options){.endpoint = fakedb_endpoint(db),
                                                         .region = "us-east-1",
                                                         .access_key_id = "AKIDBENCH",
                                                         .secret_access_key = "bench",
                                                         .clock = clock,
                                                         .imds_disabled = true,
                                                         .log_level = DDB_LOG_ERROR,
                                                         .telemetry = tel,
                                                         .retry = {.max_attempts = max_attempts}},
                                   &err);
    if (!c) {
        fprintf(stderr, "client: %s\n", err.message);
        exit(1);
    }
    return c;
}

static ddb_client *client_on(ddb_clock *clock, const ddb_telemetry *tel)
{
    return client_with(clock, tel, 0);
}

static int threads_now(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    if (d)
        closedir(d);
    return n;
}

static long rss_kb(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* ---- exact costs, on a fake clock */

static void costs(void)
{
    ddb_clock *clock = ddb_fake_clock_new(1767225600000LL);
    ddb_client *ca = client_on(clock, NULL), *cb = client_on(clock, NULL);
    ddb_error err;
    ddb_table *ta = ddb_table_open(ca, "Bench", "pk", "sk", &err);
    ddb_table *tb = ddb_table_open(cb, "Bench", "pk", "sk", &err);
    ddb_lock_table *la = ddb_lock_table_new(ta, NULL, &err), *lb = ddb_lock_table_new(tb, NULL, &err);
    fakedb_stats s0 = fakedb_get_stats(db, NULL);
    ddb_lease *lease = NULL;
    ddb_lock_try_acquire(la, "free", 30000, &lease, NULL, &err);
    fakedb_stats s1 = fakedb_get_stats(db, NULL);
    printf("requests per acquire of a free lock: %ld\n", s1.requests - s0.requests);
    bool held = false;
    ddb_lease_renew(lease, &held, NULL, &err);
    fakedb_stats s2 = fakedb_get_stats(db, NULL);
    printf("requests per renewal: %ld\n", s2.requests - s1.requests);

    /* an acquire whose answer is lost (one attempt): the write, and the read that tells */
    ddb_client *cl = client_with(clock, NULL, DDB_NO_RETRIES);
    ddb_table *tl = ddb_table_open(cl, "Bench", "pk", "sk", &err);
    ddb_lock_table *ll = ddb_lock_table_new(tl, NULL, &err);
    fakedb_fault_add(db, &(fakedb_fault){.kind = FAKEDB_FAULT_LOST_RESPONSE,
                                         .operation = "UpdateItem", .count = 1});
    ddb_lease *lost = NULL;
    fakedb_stats l0 = fakedb_get_stats(db, NULL);
    int lrc = ddb_lock_try_acquire(ll, "lost", 30000, &lost, NULL, &err);
    fakedb_stats l1 = fakedb_get_stats(db, NULL);
    printf("requests per acquire whose answer was lost: %ld (%s)\n", l1.requests - l0.requests,
           lrc == 0 && lost ? "acquired" : ddb_error_name(lrc));
    ddb_lease_release(lost);
    ddb_lock_table_free(ll);
    ddb_table_close(tl);
    ddb_client_free(cl);

    /* a contender polls a live holder 30 times */
    ddb_lease *none = NULL;
    ddb_lock_try_acquire(lb, "free", 30000, &none, NULL, &err); /* first meeting */
    fakedb_stats g0 = fakedb_get_stats(db, "GetItem"), u0 = fakedb_get_stats(db, "UpdateItem");
    for (int i = 0; i < 30; i++) {
        ddb_fake_clock_advance(clock, 10000);
        ddb_fake_clock_settle(clock, 10000);
        ddb_lock_try_acquire(lb, "free", 30000, &none, NULL, &err);
    }
    fakedb_stats g1 = fakedb_get_stats(db, "GetItem"), u1 = fakedb_get_stats(db, "UpdateItem");
    printf("per poll of a waiting contender: %.2f reads, %.2f failed writes (%ld holder "
           "renewals)\n",
           (g1.requests - g0.requests) / 30.0,
           (u1.condition_failures - u0.condition_failures) / 30.0, u1.requests - u0.requests);
    ddb_lease_release(lease);

    /* what holding costs, for capacity planning (docs/coordination.md): the requests of
     * 100 leases of 30 s held for 90 s of the fake clock, nine renewals each */
    enum { HELD = 100 };
    ddb_lease *held_leases[HELD] = {0};
    for (int i = 0; i < HELD; i++) {
        char hname[32];
        snprintf(hname, sizeof hname, "held-%d", i);
        ddb_lock_try_acquire(la, hname, 30000, &held_leases[i], NULL, &err);
    }
    fakedb_stats h0 = fakedb_get_stats(db, NULL), hu0 = fakedb_get_stats(db, "UpdateItem");
    int unsettled = 0, held_lost = 0;
    for (int i = 0; i < 90; i++) {
        ddb_fake_clock_advance(clock, 1000);
        /* a second's renewals must be answered before the next: else the count is short */
        if (ddb_fake_clock_settle(clock, 120000) != 0)
            unsettled++;
    }
    fakedb_stats h1 = fakedb_get_stats(db, NULL), hu1 = fakedb_get_stats(db, "UpdateItem");
    for (int i = 0; i < HELD; i++)
        held_lost += !held_leases[i] || ddb_lease_loss_reason(held_leases[i]) != DDB_LOSS_NONE;
    printf("requests per second per held lease of 30 s: %.4f (%ld in 90 s for %d leases, "
           "%ld of them UpdateItem; %d lost, %d settles timed out)\n",
           (double)(h1.requests - h0.requests) / (90.0 * HELD), h1.requests - h0.requests, HELD,
           hu1.requests - hu0.requests, held_lost, unsettled);
    for (int i = 0; i < HELD; i++)
        ddb_lease_release(held_leases[i]);

    /* takeover of a crashed holder: the holder's table is freed without release */
    ddb_lock_try_acquire(la, "crash", 30000, &lease, NULL, &err);
    ddb_lock_try_acquire(lb, "crash", 30000, &none, NULL, &err);
    int64_t t0 = ddb_clock_mono_ns(clock);
    int64_t step = 1000;
    /* stop the holder's heartbeat by taking the lease out of it, as a crash would */
    dl_heartbeat_stop(lease);
    while (!none) {
        ddb_fake_clock_advance(clock, step);
        ddb_lock_try_acquire(lb, "crash", 30000, &none, NULL, &err);
    }
    printf("takeover after %" PRId64 " ms for a 30000 ms lease (try every %" PRId64 " ms)\n",
           (ddb_clock_mono_ns(clock) - t0) / 1000000, step);
    ddb_lease_release(none);
    ddb_lease_release(lease);
    ddb_lock_table_free(la);
    ddb_lock_table_free(lb);
    ddb_table_close(ta);
    ddb_table_close(tb);
    ddb_client_free(ca);
    ddb_client_free(cb);
    ddb_clock_unref(clock);
}

/* ---- many leases, system clock */

typedef struct lagrec {
    pthread_mutex_t mu;
    int64_t *last_ns;     /* per lease: when its last renewal started */
    int64_t *lags_ns;
    size_t n_lags, cap;
    int64_t third_ns;
    uint64_t *span_lease; /* span id -> lease index + 1 (ring) */
    int slow_every;       /* leases whose renewals are delayed on purpose: not counted */
} lagrec;

static lagrec LR;
#define RING 65536

static void on_start(void *arg, uint64_t id, uint64_t parent, const char *name,
                     const uint64_t *links, size_t n)
{
    if (strcmp(name, "Lock.Renew") != 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pthread_mutex_lock(&LR.mu);
    LR.span_lease[id % RING] = (uint64_t)((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
    pthread_mutex_unlock(&LR.mu);
}

static void on_attr(void *arg, uint64_t id, const ddb_attr *a)
{
    if (strcmp(a->key, "dynalock.lock.name") != 0 || strncmp(a->v.s, "bench-", 6) != 0)
        return;
    pthread_mutex_lock(&LR.mu);
    int64_t at = (int64_t)LR.span_lease[id % RING];
    if (at) {
        long i = atol(a->v.s + 6);
        if (LR.last_ns[i] && LR.n_lags < LR.cap && !(LR.slow_every && i % LR.slow_every == 0)) {
            int64_t lag = at - LR.last_ns[i] - LR.third_ns;
            LR.lags_ns[LR.n_lags++] = lag > 0 ? lag : 0;
        }
        LR.last_ns[i] = at;
        LR.span_lease[id % RING] = 0;
    }
    pthread_mutex_unlock(&LR.mu);
}

#ifdef DYNALOCK_BENCH_OTEL
/* The bench's own callbacks, then the exporter's. */
static ddb_otel *g_otel;

static void tee_start(void *arg, uint64_t id, uint64_t parent, const char *name,
                      const uint64_t *links, size_t n_links)
{
    on_start(arg, id, parent, name, links, n_links);
    const ddb_telemetry *o = ddb_otel_telemetry(g_otel);
    o->span_start(o->arg, id, parent, name, links, n_links);
}

static void tee_attr(void *arg, uint64_t id, const ddb_attr *a)
{
    on_attr(arg, id, a);
    const ddb_telemetry *o = ddb_otel_telemetry(g_otel);
    o->span_attr(o->arg, id, a);
}

static void tee_end(void *arg, uint64_t id, const char *error_type)
{
    const ddb_telemetry *o = ddb_otel_telemetry(g_otel);
    o->span_end(o->arg, id, error_type);
}

static void tee_metric(void *arg, const char *name, const char *unit, double value,
                       const ddb_attr *attrs, size_t n)
{
    const ddb_telemetry *o = ddb_otel_telemetry(g_otel);
    o->metric(o->arg, name, unit, value, attrs, n);
}
#endif

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A scenario of many leases: `delay_all_ms` delays every renewal at the server (0 for
 * none); `slow_every` > 0 delays every renewal of one lease in `slow_every` by slow_ms. */
typedef struct scenario {
    int n;
    int64_t lease_ms, run_ms;
    int64_t delay_all_ms;
    int slow_every;
    int64_t slow_ms;
    bool measure_memory;
} scenario;

static bool is_slow(const scenario *sc, int i)
{
    return sc->slow_every > 0 && i % sc->slow_every == 0;
}

static void many(const scenario *sc)
{
    int n = sc->n;
    int64_t lease_ms = sc->lease_ms, run_ms = sc->run_ms;
    memset(&LR, 0, sizeof LR);
    pthread_mutex_init(&LR.mu, NULL);
    LR.last_ns = calloc((size_t)n, sizeof *LR.last_ns);
    LR.cap = (size_t)n * (size_t)(run_ms / (lease_ms / 3) + 2);
    LR.lags_ns = calloc(LR.cap, sizeof *LR.lags_ns);
    LR.span_lease = calloc(RING, sizeof *LR.span_lease);
    LR.third_ns = lease_ms * 1000000 / 3;
    LR.slow_every = sc->slow_every;
    ddb_telemetry tel = {.span_start = on_start, .span_attr = on_attr};
#ifdef DYNALOCK_BENCH_OTEL
    if (getenv("DYNALOCK_BENCH_OTLP_ENDPOINT")) {
        ddb_error oerr;
        g_otel = ddb_otel_new(&(ddb_otel_options){
            .endpoint = getenv("DYNALOCK_BENCH_OTLP_ENDPOINT"), .ignore_environment = true,
            .service_name = "coord_bench"}, &oerr);
        if (!g_otel) {
            fprintf(stderr, "otel: %s\n", oerr.message);
            exit(1);
        }
        tel = (ddb_telemetry){.span_start = tee_start, .span_attr = tee_attr,
                              .span_end = tee_end, .metric = tee_metric};
    }
#endif
    ddb_client *c = client_on(ddb_clock_system(), &tel);
    ddb_error err;
    ddb_table *t = ddb_table_open(c, "Bench", "pk", "sk", &err);
    ddb_lock_table *locks = ddb_lock_table_new(t, NULL, &err);
    ddb_lease **leases = calloc((size_t)n, sizeof *leases);
    int threads0 = threads_now();
    long rss0 = rss_kb();
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "bench-%d", i);
        struct timespec sent;
        clock_gettime(CLOCK_MONOTONIC, &sent);
        if (ddb_lock_try_acquire(locks, name, lease_ms, &leases[i], NULL, &err) != 0 || !leases[i]) {
            fprintf(stderr, "acquire %d: %s\n", i, err.message);
            exit(1);
        }
        /* The lease counts from the send of its write: the first renewal is due a
         * third after that. */
        pthread_mutex_lock(&LR.mu);
        LR.last_ns[i] = (int64_t)sent.tv_sec * 1000000000 + sent.tv_nsec;
        pthread_mutex_unlock(&LR.mu);
    }
    long rss1 = rss_kb();
    /* The faults start once every lease is held: they delay renewals only. */
    if (sc->delay_all_ms > 0)
        fakedb_fault_add(db, &(fakedb_fault){.kind = FAKEDB_FAULT_DELAY, .operation = "UpdateItem",
                                             .delay_ms = sc->delay_all_ms});
    for (int i = 0; i < n; i++) {
        if (!is_slow(sc, i))
            continue;
        char key[40];
        snprintf(key, sizeof key, DDB__LOCK_PK_PREFIX "bench-%d", i);
        fakedb_fault_add(db, &(fakedb_fault){.kind = FAKEDB_FAULT_DELAY, .operation = "UpdateItem",
                                             .key = key, .delay_ms = sc->slow_ms});
    }
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    struct timespec ts = {.tv_sec = run_ms / 1000, .tv_nsec = (run_ms % 1000) * 1000000};
    nanosleep(&ts, NULL); /* the benchmark's run time, not a synchronisation */
    getrusage(RUSAGE_SELF, &r1);
    int lost = 0, lost_slow = 0;
    for (int i = 0; i < n; i++) {
        bool ended = ddb_cancel_is_set(ddb_lease_ended(leases[i]));
        if (is_slow(sc, i))
            lost_slow += ended;
        else
            lost += ended;
    }
    pthread_mutex_lock(&LR.mu);
    size_t m = LR.n_lags;
    qsort(LR.lags_ns, m, sizeof *LR.lags_ns, cmp64);
    int64_t p50 = m ? LR.lags_ns[m / 2] : 0, p99 = m ? LR.lags_ns[m * 99 / 100] : 0;
    int64_t max = m ? LR.lags_ns[m - 1] : 0;
    pthread_mutex_unlock(&LR.mu);
    double cpu_s = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec -
                            r0.ru_stime.tv_sec) +
                   (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec -
                            r0.ru_stime.tv_usec) / 1e6;
    printf("\n%d leases of %" PRId64 " ms for %" PRId64 " ms", n, lease_ms, run_ms);
    if (sc->delay_all_ms)
        printf(", every renewal delayed %" PRId64 " ms", sc->delay_all_ms);
    if (sc->slow_every)
        printf(", the renewals of 1 lease in %d delayed %" PRId64 " ms", sc->slow_every,
               sc->slow_ms);
    printf(":\n%zu renewals of the others, %d of them lost", m, lost);
    if (sc->slow_every)
        printf(" (%d of %d delayed leases lost)", lost_slow, (n + sc->slow_every - 1) / sc->slow_every);
    printf("\nrenewal lag of the others: p50 %.2f ms, p99 %.2f ms (%.3f%% of the lease), max %.2f ms\n",
           p50 / 1e6, p99 / 1e6, 100.0 * (double)p99 / ((double)lease_ms * 1e6), max / 1e6);
    printf("scheduler threads in the process: %d (threads the client added to hold its "
           "leases: %d)\n",
           ddb__sched_workers(), threads_now() - threads0);
    if (sc->measure_memory) /* later scenarios reuse the memory the first one freed */
        printf("memory per lease (process RSS, includes the in-process server's items): "
               "%.0f bytes\n",
               (double)(rss1 - rss0) * 1024.0 / n);
    printf("CPU per renewal (whole process, server included): %.1f us\n",
           m ? cpu_s * 1e6 / (double)m : 0.0);
    for (int i = 0; i < n; i++)
        ddb_lease_release(leases[i]);
    free(leases);
    ddb_lock_table_free(locks);
    ddb_table_close(t);
    ddb_client_free(c);
#ifdef DYNALOCK_BENCH_OTEL
    if (g_otel) {
        ddb_otel_stats os;
        ddb_otel_get_stats(g_otel, &os);
        printf("exporter: %" PRIu64 " spans exported, %" PRIu64 " dropped (queue full), %" PRIu64
               " failed, %" PRIu64 " metric exports\n", os.spans_exported, os.spans_queue_full,
               os.spans_failed, os.metric_exports);
        ddb_otel_free(g_otel);
        g_otel = NULL;
    }
#endif
    fakedb_fault_clear(db);
    free(LR.last_ns);
    free(LR.lags_ns);
    free(LR.span_lease);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    int64_t lease_ms = argc > 2 ? atoll(argv[2]) : 30000;
    int64_t run_ms = argc > 3 ? atoll(argv[3]) : 35000;
    fakedb_error ferr;
    db = fakedb_start(&(fakedb_options){0}, &ferr);
    if (!db || fakedb_create_table(db, "Bench", "pk", "sk", &ferr) != 0) {
        fprintf(stderr, "fakedb: %s\n", ferr.message);
        return 1;
    }
    costs();
    if (n > 0) {
        /* Against the in-process server as it answers (about 0.1 ms a request). */
        many(&(scenario){.n = n, .lease_ms = lease_ms, .run_ms = run_ms, .measure_memory = true});
        /* As against DynamoDB, where a request takes 5-10 ms: every renewal delayed. */
        many(&(scenario){.n = n, .lease_ms = lease_ms, .run_ms = run_ms, .delay_all_ms = 10});
        /* One lease in a hundred has its renewals hang for 20 s; a run of more than a
         * lease, so that those run out. */
        many(&(scenario){.n = n / 10, .lease_ms = lease_ms, .run_ms = lease_ms + 2000,
                         .slow_every = 100, .slow_ms = 20000});
    }
    fakedb_stop(db);
    return 0;
}
