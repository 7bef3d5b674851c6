/* metrics_cost.c: what fakedb's metrics add to each request (metrics.c): the two clock
 * reads around the request and the count (relaxed atomic additions; an error also takes
 * the error list's lock), measured alone, from 1, 2 and 4 threads counting into one
 * fakedb__metrics as fakedb's worker threads do. Compare the ns per request it prints
 * with fakedb's CPU per GetItem (bench/RESULTS.md). Then the same for the console's ring
 * of recent requests (fakedb__recent_add: one short critical section per request).
 *
 * Usage: bench_metrics_cost [MILLIONS_PER_THREAD]   (default 5) */
#include "protocol.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static fakedb__metrics *metrics;
static fakedb__recent *recent;
static long per_thread;
static int with_error;

static void *count(void *arg)
{
    (void)arg;
    for (long i = 0; i < per_thread; i++) {
        uint64_t t0 = fakedb__metrics_now_ns();
        fakedb__metrics_request(metrics, FDB_OP_GET_ITEM, with_error ? 400 : 200,
                                with_error ? "ResourceNotFoundException" : "",
                                fakedb__metrics_now_ns() - t0);
    }
    return NULL;
}

static void *record(void *arg)
{
    (void)arg;
    for (long i = 0; i < per_thread; i++) {
        uint64_t t0 = fakedb__metrics_now_ns();
        fakedb__recent_add(recent, FDB_OP_GET_ITEM, with_error ? 400 : 200, "Bench",
                           with_error ? "ResourceNotFoundException" : "", t0, 1000);
    }
    return NULL;
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    per_thread = (argc > 1 ? atol(argv[1]) : 5) * 1000000L;
    if (per_thread <= 0)
        return 64;
    printf("%-8s %-7s %14s %14s\n", "threads", "answer", "cpu ns/request", "wall ns/request");
    for (with_error = 0; with_error < 2; with_error++) {
        for (int threads = 1; threads <= 4; threads *= 2) {
            metrics = calloc(1, sizeof *metrics);
            if (!metrics)
                return 1;
            fakedb__metrics_init(metrics);
            pthread_t th[4];
            double c0 = thread_cpu_s();
            uint64_t w0 = fakedb__metrics_now_ns();
            for (int i = 0; i < threads; i++)
                pthread_create(&th[i], NULL, count, NULL);
            for (int i = 0; i < threads; i++)
                pthread_join(th[i], NULL);
            double cpu = thread_cpu_s() - c0;
            double wall = (double)(fakedb__metrics_now_ns() - w0);
            double n = (double)per_thread * threads;
            printf("%-8d %-7s %14.1f %14.1f\n", threads, with_error ? "error" : "200",
                   cpu * 1e9 / n, wall / n);
            fakedb__metrics_cleanup(metrics);
            free(metrics);
        }
    }
    printf("\nthe ring of recent requests (fakedb__recent_add)\n");
    printf("%-8s %-7s %14s %14s\n", "threads", "answer", "cpu ns/request", "wall ns/request");
    for (with_error = 0; with_error < 2; with_error++) {
        for (int threads = 1; threads <= 4; threads *= 2) {
            recent = calloc(1, sizeof *recent);
            if (!recent)
                return 1;
            pthread_mutex_init(&recent->lock, NULL);
            pthread_t th[4];
            double c0 = thread_cpu_s();
            uint64_t w0 = fakedb__metrics_now_ns();
            for (int i = 0; i < threads; i++)
                pthread_create(&th[i], NULL, record, NULL);
            for (int i = 0; i < threads; i++)
                pthread_join(th[i], NULL);
            double cpu = thread_cpu_s() - c0;
            double wall = (double)(fakedb__metrics_now_ns() - w0);
            double n = (double)per_thread * threads;
            printf("%-8d %-7s %14.1f %14.1f\n", threads, with_error ? "error" : "200",
                   cpu * 1e9 / n, wall / n);
            pthread_mutex_destroy(&recent->lock);
            free(recent);
        }
    }
    return 0;
}
