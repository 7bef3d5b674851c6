/* bench_client.c: measures libddb's cost on the client side: CPU time (user and system
 * of this process, from getrusage) per request, and requests per second, for GetItem and
 * a conditional UpdateItem, from 1 and from N threads sharing one client. The server runs
 * in another process, so its work is not counted; the system time is mostly the
 * kernel's loopback TCP work for the client's sends and receives. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <dynalock/ddb.h>

static ddb_table *table;
static atomic_bool stop_flag;
static atomic_long failures;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void cpu_s(double *user, double *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

typedef struct worker {
    pthread_t th;
    int id;
    bool update;
    long requests;
} worker;

static void *run(void *p)
{
    worker *w = p;
    char pk[32];
    snprintf(pk, sizeof pk, "bench-%d", w->id);
    ddb_item *key = ddb_item_new();
    ddb_item_set_s(key, "pk", pk);
    ddb_item *vals = ddb_item_new();
    ddb_item_set_s(vals, ":owner", "bench");
    ddb_names names = (const char *[]){ "#o", "owner", NULL };
    ddb_result res = { 0 };
    ddb_error err;
    long n = 0;
    while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
        int rc;
        if (w->update) {
            ddb_item_set_i64(vals, ":n", n);
            rc = ddb_table_update_item(table, key, "SET #o = :owner, n = :n",
                                 &(ddb_write_options){ .condition = "attribute_exists(pk) AND #o = :owner",
                                                       .names = names, .values = vals }, &res, NULL, &err);
        } else {
            rc = ddb_table_get_item(table, key, NULL, &res, NULL, &err);
        }
        if (rc != 0) {
            atomic_fetch_add(&failures, 1);
            if (atomic_load(&failures) < 5)
                fprintf(stderr, "request failed: %s\n", err.message);
        }
        n++;
    }
    ddb_result_cleanup(&res);
    ddb_item_free(vals);
    ddb_item_free(key);
    w->requests = n;
    return NULL;
}

static void measure(const char *op, bool update, int threads, double seconds)
{
    worker *ws = calloc((size_t)threads, sizeof *ws);
    atomic_store(&stop_flag, false);
    atomic_store(&failures, 0);
    double u0, s0, t0 = now_s();
    cpu_s(&u0, &s0);
    for (int i = 0; i < threads; i++) {
        ws[i].id = i;
        ws[i].update = update;
        pthread_create(&ws[i].th, NULL, run, &ws[i]);
    }
    struct timespec d = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
    nanosleep(&d, NULL);
    atomic_store(&stop_flag, true);
    long total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(ws[i].th, NULL);
        total += ws[i].requests;
    }
    double u1, s1, wall = now_s() - t0;
    cpu_s(&u1, &s1);
    double user = u1 - u0, sys = s1 - s0, cpu = user + sys;
    printf("client=c op=%s threads=%d requests=%ld seconds=%.2f rps=%.0f cpu_us_per_req=%.1f "
           "user_us_per_req=%.1f sys_us_per_req=%.1f rps_per_core=%.0f failures=%ld\n",
           op, threads, total, wall, (double)total / wall, cpu / (double)total * 1e6,
           user / (double)total * 1e6, sys / (double)total * 1e6, (double)total / cpu,
           atomic_load(&failures));
    fflush(stdout);
    free(ws);
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL;
    double seconds = 3;
    int threads = 8;
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--endpoint"))
            endpoint = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--only"))
            only = argv[i + 1];
    }
    if (!endpoint || seconds <= 0 || threads < 1) {
        fprintf(stderr, "usage: bench_client --endpoint URL [--seconds S] [--threads N] "
                        "[--only get1|update1|getN|updateN]\n");
        return 2;
    }
    ddb_error err;
    ddb_client *c = ddb_client_new(&(ddb_client_options){ .endpoint = endpoint, .region = "us-east-1",
        .access_key_id = "AKIDBENCH", .secret_access_key = "bench-secret", .imds_disabled = true }, &err);
    if (!c) {
        fprintf(stderr, "client: %s\n", err.message);
        return 1;
    }
    if (ddb_client_create_table(c, "Bench", &(ddb_key_schema){ .pk = "pk" },
                         &(ddb_create_table_options){ .exist_ok = true, .wait_active = true }, NULL, &err) != 0) {
        fprintf(stderr, "CreateTable: %s\n", err.message);
        return 1;
    }
    table = ddb_table_open(c, "Bench", "pk", NULL, &err);
    for (int i = 0; i < threads; i++) {
        ddb_item *it = ddb_item_new();
        char pk[32];
        snprintf(pk, sizeof pk, "bench-%d", i);
        ddb_item_set_s(it, "pk", pk);
        ddb_item_set_s(it, "owner", "bench");
        ddb_item_set_s(it, "payload", "a small item of about a hundred bytes, like a lock or a lease record");
        ddb_item_set_i64(it, "n", 0);
        if (ddb_table_put_item(table, it, NULL, NULL, NULL, &err) != 0) {
            fprintf(stderr, "PutItem: %s\n", err.message);
            return 1;
        }
        ddb_item_free(it);
    }
    /* --only picks one of the four runs (e.g. to profile it alone). */
    if (!only || !strcmp(only, "get1"))
        measure("GetItem", false, 1, seconds);
    if (!only || !strcmp(only, "update1"))
        measure("UpdateItem", true, 1, seconds);
    if (!only || !strcmp(only, "getN"))
        measure("GetItem", false, threads, seconds);
    if (!only || !strcmp(only, "updateN"))
        measure("UpdateItem", true, threads, seconds);
    fprintf(stderr, "connections opened: %ld\n", ddb_client_connections_opened(c));
    ddb_table_close(table);
    ddb_client_free(c);
    return 0;
}
