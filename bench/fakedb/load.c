/* load.c: a closed-loop load generator for DynamoDB-protocol servers. Each connection is
 * a thread with one keep-alive socket that sends a request, reads the whole answer, and
 * sends the next; latencies are kept per request for p50/p99/p99.9. Raw sockets, so the
 * client costs little of the machine's two cores next to the server it measures.
 *
 * Usage: bench_load HOST PORT setup [ITEMS]          table Bench: ITEMS items (1,000) and
 *                                                     64 lock items
 *        bench_load HOST PORT setup-query ITEMS      table BenchQ: one partition of ITEMS
 *                                                     items of about 110 bytes
 *        bench_load HOST PORT WORKLOAD CONNECTIONS SECONDS [ITEMS]
 *   WORKLOAD: get | put | cond-update | tx | query (a Query of BenchQ's partition with no
 *   Limit: its first 1 MB page); ITEMS: how many items `get` picks from (1,000)
 * Prints one line: workload conns requests req_per_s p50_us p99_us errors cond_failed
 * p999_us */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_ITEMS 1000
#define SETUP_BATCH 25      /* BatchWriteItem's limit */
#define SETUP_THREADS 4
#define LOCK_ITEMS 64
#define MAX_SAMPLES 4000000

static const char *host;
static int port;
static const char *workload;
static double seconds;
static atomic_int go;
static long items = DEFAULT_ITEMS;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int connect_to(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

typedef struct conn {
    int fd;
    char *buf;              /* cap bytes: a Query's 1 MB page fits */
    size_t cap, have;
} conn;

static conn *conn_new(void)
{
    conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = -1;
    c->cap = 4u << 20;
    c->buf = malloc(c->cap);
    if (!c->buf) {
        free(c);
        return NULL;
    }
    return c;
}

static void conn_free(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->buf);
    free(c);
}

/* One request on c's connection (opened when there is none): returns the answer's HTTP
 * status and, in *body, a pointer into c->buf to its body; -1 when the connection broke,
 * with c->have > 0 if part of an answer had come. */
static int exchange(conn *c, const char *target, const char *json, const char **body)
{
    char head[1024];
    size_t len = strlen(json);
    int hl = snprintf(head, sizeof head,
                      "POST / HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/x-amz-json-1.0\r\n"
                      "X-Amz-Target: DynamoDB_20120810.%s\r\nX-Amz-Date: 20260101T000000Z\r\n"
                      "Authorization: AWS4-HMAC-SHA256 Credential=AKIDBENCH/20260101/us-east-1/dynamodb/aws4_request, "
                      "SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature="
                      "0000000000000000000000000000000000000000000000000000000000000000\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      host, port, target, len);
    if (c->fd < 0 && (c->fd = connect_to()) < 0)
        return -1;
    if (write(c->fd, head, (size_t)hl) != hl || write(c->fd, json, len) != (ssize_t)len)
        goto broken;
    c->have = 0;
    for (;;) {
        if (c->have + 1 >= c->cap)
            goto broken;
        ssize_t n = read(c->fd, c->buf + c->have, c->cap - 1 - c->have);
        if (n <= 0)
            goto broken;
        c->have += (size_t)n;
        c->buf[c->have] = '\0';
        char *end = memmem(c->buf, c->have, "\r\n\r\n", 4);
        if (!end)
            continue;
        int status = atoi(c->buf + 9);
        char *cl = strcasestr(c->buf, "\r\ncontent-length:");
        if (cl && cl < end) {
            size_t want = (size_t)atol(cl + 17);
            size_t got = c->have - (size_t)(end + 4 - c->buf);
            if (got < want)
                continue;
            *body = end + 4;
            return status;
        }
        /* Chunked: read until the terminating chunk. */
        if (strstr(end + 4, "\r\n0\r\n\r\n") || strncmp(end + 4, "0\r\n\r\n", 5) == 0) {
            *body = end + 4;
            return status;
        }
    }
broken:
    close(c->fd);
    c->fd = -1;
    return -1;
}

/* Sends one request and reads its answer, as exchange does. A kept-alive connection may
 * have been closed by the server while it sat idle (fakedb closes connections idle for
 * its --idle-timeout, 60 s by default, and DynamoDB's front ends close idle ones too),
 * and setup's first connection sits idle while the loaders write: a request that fails
 * on a reused connection before any byte of its answer came is sent once more on a new
 * connection, as the SDKs' HTTP clients do (Go's transport resends a request that lost
 * a reused connection; botocore's pool replaces a dropped connection and its retries
 * resend on a connection error). */
static int roundtrip(conn *c, const char *target, const char *json, const char **body)
{
    bool reused = c->fd >= 0;
    c->have = 0;
    int status = exchange(c, target, json, body);
    if (status < 0 && reused && c->have == 0)
        status = exchange(c, target, json, body);
    return status;
}

typedef struct worker {
    int id;
    pthread_t thread;
    int64_t *lat_ns;
    size_t n;
    long errors, cond_failed;
} worker;

static unsigned next_rand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void make_request(worker *w, unsigned *seed, long i, char *json, size_t cap,
                         const char **target)
{
    unsigned r = next_rand(seed);
    if (strcmp(workload, "get") == 0) {
        *target = "GetItem";
        snprintf(json, cap, "{\"TableName\":\"Bench\",\"Key\":{\"pk\":{\"S\":\"item-%lu\"}}}",
                 (unsigned long)(((unsigned long)r << 8 ^ next_rand(seed)) % (unsigned long)items));
    } else if (strcmp(workload, "put") == 0) {
        *target = "PutItem";
        snprintf(json, cap,
                 "{\"TableName\":\"Bench\",\"Item\":{\"pk\":{\"S\":\"put-%d-%ld\"},"
                 "\"v\":{\"S\":\"value\"},\"n\":{\"N\":\"%ld\"}}}",
                 w->id, i, i);
    } else if (strcmp(workload, "cond-update") == 0) {
        /* A lock-style write: every other one fails its condition and asks for ALL_OLD. */
        *target = "UpdateItem";
        snprintf(json, cap,
                 "{\"TableName\":\"Bench\",\"Key\":{\"pk\":{\"S\":\"LOCK#%u\"}},"
                 "\"UpdateExpression\":\"SET #r = :r ADD #f :one\","
                 "\"ConditionExpression\":\"attribute_not_exists(#o) OR #o = :o\","
                 "\"ExpressionAttributeNames\":{\"#o\":\"owner\",\"#r\":\"rvn\",\"#f\":\"fence\"},"
                 "\"ExpressionAttributeValues\":{\":o\":{\"S\":\"%s\"},\":r\":{\"S\":\"r%ld\"},"
                 "\":one\":{\"N\":\"1\"}},"
                 "\"ReturnValuesOnConditionCheckFailure\":\"ALL_OLD\"}",
                 r % LOCK_ITEMS, (i & 1) ? "owner-a" : "owner-b", i);
    } else if (strcmp(workload, "query") == 0) {
        *target = "Query";
        snprintf(json, cap, "{\"TableName\":\"BenchQ\",\"KeyConditionExpression\":\"pk = :p\","
                            "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"P\"}}}");
    } else {
        *target = "TransactWriteItems";
        snprintf(json, cap,
                 "{\"TransactItems\":[{\"ConditionCheck\":{\"TableName\":\"Bench\","
                 "\"Key\":{\"pk\":{\"S\":\"LOCK#%u\"}},\"ConditionExpression\":\"#o = :o\","
                 "\"ExpressionAttributeNames\":{\"#o\":\"owner\"},"
                 "\"ExpressionAttributeValues\":{\":o\":{\"S\":\"owner-a\"}}}},"
                 "{\"Put\":{\"TableName\":\"Bench\",\"Item\":{\"pk\":{\"S\":\"tx-%d-%ld\"},"
                 "\"v\":{\"S\":\"value\"}}}}]}",
                 r % LOCK_ITEMS, w->id, i);
    }
}

static void *run_worker(void *arg)
{
    worker *w = arg;
    conn *c = conn_new();
    if (!c) {
        w->errors++;
        return NULL;
    }
    unsigned seed = 7919u * (unsigned)(w->id + 1);
    char json[2048];
    while (!atomic_load(&go))
        ;
    int64_t end = now_ns() + (int64_t)(seconds * 1e9);
    for (long i = 0;; i++) {
        const char *target, *body;
        make_request(w, &seed, i, json, sizeof json, &target);
        int64_t t0 = now_ns();
        int status = roundtrip(c, target, json, &body);
        int64_t t1 = now_ns();
        if (status == 200) {
            /* ok */
        } else if (status == 400 && (strstr(body, "ConditionalCheckFailed") ||
                                     strstr(body, "TransactionCanceled"))) {
            w->cond_failed++;
        } else {
            w->errors++;
        }
        if (w->n < MAX_SAMPLES)
            w->lat_ns[w->n++] = t1 - t0;
        if (t1 >= end)
            break;
    }
    conn_free(c);
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* CreateTable of `name` (after a DeleteTable), with a sort key `sk` when `range`. */
static int create_table(conn *c, const char *name, bool range)
{
    const char *body;
    char json[1024];
    snprintf(json, sizeof json, "{\"TableName\":\"%s\"}", name);
    roundtrip(c, "DeleteTable", json, &body);
    snprintf(json, sizeof json,
             "{\"TableName\":\"%s\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}%s],"
             "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}%s],"
             "\"BillingMode\":\"PAY_PER_REQUEST\"}",
             name, range ? ",{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}" : "",
             range ? ",{\"AttributeName\":\"sk\",\"AttributeType\":\"S\"}" : "");
    int st = roundtrip(c, "CreateTable", json, &body);
    if (st != 200) {
        fprintf(stderr, "bench_load: CreateTable answered %d: %s\n", st, st > 0 ? body : "");
        return 1;
    }
    return 0;
}

/* The loaders of setup: thread t writes items t, t + SETUP_THREADS, ... in batches. */
typedef struct loader {
    pthread_t thread;
    int id;
    bool query;             /* BenchQ's partition, not Bench */
    int failed;
} loader;

static void *run_loader(void *arg)
{
    loader *l = arg;
    conn *c = conn_new();
    size_t cap = SETUP_BATCH * 256 + 256;
    char *json = malloc(cap);
    if (!c || !json) {
        l->failed = 1;
        goto out;
    }
    for (long first = (long)l->id * SETUP_BATCH; first < items; first += (long)SETUP_THREADS * SETUP_BATCH) {
        size_t n = (size_t)snprintf(json, cap, "{\"RequestItems\":{\"%s\":[", l->query ? "BenchQ" : "Bench");
        for (long i = first; i < first + SETUP_BATCH && i < items; i++) {
            if (l->query)
                n += (size_t)snprintf(json + n, cap - n,
                                      "%s{\"PutRequest\":{\"Item\":{\"pk\":{\"S\":\"P\"},\"sk\":{\"S\":\"s%09ld\"},"
                                      "\"v\":{\"S\":\"%s\"}}}}",
                                      i == first ? "" : ",", i,
                                      "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567");
            else
                n += (size_t)snprintf(json + n, cap - n,
                                      "%s{\"PutRequest\":{\"Item\":{\"pk\":{\"S\":\"item-%ld\"},"
                                      "\"v\":{\"S\":\"value\"},\"n\":{\"N\":\"%ld\"}}}}",
                                      i == first ? "" : ",", i, i);
        }
        snprintf(json + n, cap - n, "]}}");
        const char *body;
        int st = roundtrip(c, "BatchWriteItem", json, &body);
        /* every item is written at once: a test server leaves nothing unprocessed */
        if (st != 200 || !strstr(body, "\"UnprocessedItems\":{}")) {
            fprintf(stderr, "bench_load: BatchWriteItem answered %d: %.200s\n", st, st > 0 ? body : "");
            l->failed = 1;
            break;
        }
    }
out:
    if (c)
        conn_free(c);
    free(json);
    return NULL;
}

static int load_items(bool query)
{
    loader l[SETUP_THREADS];
    int failed = 0;
    for (int i = 0; i < SETUP_THREADS; i++) {
        l[i] = (loader){.id = i, .query = query};
        pthread_create(&l[i].thread, NULL, run_loader, &l[i]);
    }
    for (int i = 0; i < SETUP_THREADS; i++) {
        pthread_join(l[i].thread, NULL);
        failed |= l[i].failed;
    }
    return failed;
}

static int setup(bool query)
{
    conn *c = conn_new();
    const char *body;
    char json[1024];
    int rc = 1;
    if (!c || create_table(c, query ? "BenchQ" : "Bench", query) || load_items(query))
        goto out;
    for (int i = 0; !query && i < LOCK_ITEMS; i++) {
        snprintf(json, sizeof json,
                 "{\"TableName\":\"Bench\",\"Item\":{\"pk\":{\"S\":\"LOCK#%d\"},\"owner\":{\"S\":\"owner-a\"},"
                 "\"fence\":{\"N\":\"1\"}}}",
                 i);
        int st = roundtrip(c, "PutItem", json, &body);
        if (st != 200) {
            fprintf(stderr, "bench_load: PutItem of LOCK#%d answered %d: %.200s\n", i, st, st > 0 ? body : "");
            goto out;
        }
    }
    rc = 0;
out:
    if (c)
        conn_free(c);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_load HOST PORT setup|setup-query|get|put|cond-update|tx|query "
                        "[CONNS SECONDS] [ITEMS]\n");
        return 64;
    }
    signal(SIGPIPE, SIG_IGN); /* a connection the server closed is an error, not an exit */
    host = argv[1];
    port = atoi(argv[2]);
    workload = argv[3];
    bool setting_up = !strcmp(workload, "setup") || !strcmp(workload, "setup-query");
    const char *n_items = setting_up ? (argc > 4 ? argv[4] : NULL) : (argc > 6 ? argv[6] : NULL);
    if (n_items && (items = atol(n_items)) < 1) {
        fprintf(stderr, "bench_load: bad ITEMS\n");
        return 64;
    }
    if (setting_up)
        return setup(!strcmp(workload, "setup-query"));
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "bench_load: CONNS and SECONDS are needed\n");
        return 64;
    }
    int conns = atoi(argv[4]);
    seconds = atof(argv[5]);
    if (conns < 1 || conns > 256 || seconds <= 0) {
        fprintf(stderr, "bench_load: bad CONNS or SECONDS\n");
        return 64;
    }
    worker *w = calloc((size_t)conns, sizeof *w);
    size_t per = MAX_SAMPLES / (size_t)conns;
    for (int i = 0; i < conns; i++) {
        w[i].id = i;
        w[i].lat_ns = malloc(per * sizeof(int64_t));
        pthread_create(&w[i].thread, NULL, run_worker, &w[i]);
    }
    int64_t t0 = now_ns();
    atomic_store(&go, 1);
    size_t total = 0;
    long errors = 0, cond_failed = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(w[i].thread, NULL);
        total += w[i].n;
        errors += w[i].errors;
        cond_failed += w[i].cond_failed;
    }
    double elapsed = (double)(now_ns() - t0) / 1e9;
    int64_t *all = malloc((total ? total : 1) * sizeof(int64_t));
    size_t k = 0;
    for (int i = 0; i < conns; i++) {
        memcpy(all + k, w[i].lat_ns, w[i].n * sizeof(int64_t));
        k += w[i].n;
        free(w[i].lat_ns);
    }
    qsort(all, total, sizeof(int64_t), cmp_i64);
    double p50 = total ? (double)all[total / 2] / 1000.0 : 0;
    double p99 = total ? (double)all[(size_t)((double)total * 0.99)] / 1000.0 : 0;
    double p999 = total ? (double)all[(size_t)((double)total * 0.999)] / 1000.0 : 0;
    printf("%s %d %zu %.0f %.0f %.0f %ld %ld %.0f\n", workload, conns, total, (double)total / elapsed,
           p50, p99, errors, cond_failed, p999);
    free(all);
    free(w);
    return errors > (long)(total / 100) ? 1 : 0;
}
