/* bench_request_cpu.c: the client library's own CPU per request, with no network: for
 * GetItem and a conditional UpdateItem it times building the request text from items
 * and options, signing it with SigV4 (fresh date each time, as the client does) into
 * header lines, and decoding a canned DynamoDB answer into a result, stage by stage
 * and all together, as ns per request of this thread's CPU time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"

static const char get_answer[] =
    "{\"Item\":{\"pk\":{\"S\":\"bench-0\"},\"owner\":{\"S\":\"bench\"},"
    "\"payload\":{\"S\":\"a small item of about a hundred bytes, like a lock or a lease record\"},"
    "\"n\":{\"N\":\"12345\"}}}";
static const char update_answer[] = "{}";

typedef struct fixture {
    ddb_client *client;
    ddb_table *table;
    ddb_item *key, *vals;
    ddb__credentials cred;
    bool update;
    long n;
    volatile size_t sink; /* keeps results observable so no stage is optimised away */
} fixture;

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what, const ddb_error *err)
{
    fprintf(stderr, "%s failed: %s\n", what, err ? err->message : "");
    exit(1);
}

/* The request body as ddb_table_get_item / ddb_table_update_item build it. */
__attribute__((noinline)) static void stage_encode(fixture *f, dl_buf *body)
{
    ddb_error err;
    int rc;
    body->len = 0;
    if (f->update) {
        ddb_item_set_i64(f->vals, ":n", f->n++);
        ddb_names names = (const char *[]){ "#o", "owner", NULL };
        ddb_write_options o = { .condition = "attribute_exists(pk) AND #o = :owner",
                                .names = names, .values = f->vals };
        rc = ddb__update_request(f->table, f->key, "SET #o = :owner, n = :n", &o, body, &err);
    } else {
        rc = ddb__get_request(f->table, f->key, NULL, body, &err);
    }
    if (rc != 0)
        die("encode", &err);
}

/* Signing as each attempt does it: the wall clock read, SigV4, the header lines. */
__attribute__((noinline)) static void stage_sign(fixture *f, const dl_buf *body)
{
    ddb_error err;
    ddb__signed s;
    int64_t epoch_s = ddb_clock_wall_ms(f->client->clock) / 1000;
    if (ddb__client_sign(f->client, f->update ? "UpdateItem" : "GetItem", body->p, body->len,
                         &f->cred, epoch_s, &s, &err) != 0)
        die("sign", &err);
    f->sink += s.n_lines;
    ddb__signed_cleanup(&s);
}

/* The answer as the client reads it: parsed, then the item and capacity taken out. */
__attribute__((noinline)) static void stage_decode(fixture *f)
{
    const char *text = f->update ? update_answer : get_answer;
    size_t len = f->update ? sizeof update_answer - 1 : sizeof get_answer - 1;
    ddb_error err;
    json_object *resp = ddb__json_parse(text, len, DDB_EPROTOCOL, &err);
    if (!resp)
        die("parse", &err);
    ddb_result res = { 0 };
    if (ddb__item_answer(resp, f->update ? "Attributes" : "Item", &res, &err) != 0)
        die("decode", &err);
    json_object_put(resp);
    f->sink += res.item ? 1 : 0;
    ddb_result_cleanup(&res);
}

typedef struct timing {
    double encode, sign, decode, total;
} timing;

/* Each stage alone over n requests, then all three in a row; the best of `rounds`
 * (the least disturbed by other work on the machine). */
static timing measure(fixture *f, long n, int rounds)
{
    timing best = { 1e30, 1e30, 1e30, 1e30 };
    dl_buf body = { 0 };
    for (int r = 0; r < rounds; r++) {
        int64_t t0 = thread_cpu_ns();
        for (long i = 0; i < n; i++)
            stage_encode(f, &body);
        int64_t t1 = thread_cpu_ns();
        for (long i = 0; i < n; i++)
            stage_sign(f, &body);
        int64_t t2 = thread_cpu_ns();
        for (long i = 0; i < n; i++)
            stage_decode(f);
        int64_t t3 = thread_cpu_ns();
        for (long i = 0; i < n; i++) {
            stage_encode(f, &body);
            stage_sign(f, &body);
            stage_decode(f);
        }
        int64_t t4 = thread_cpu_ns();
        double dn = (double)n;
        timing t = { (double)(t1 - t0) / dn, (double)(t2 - t1) / dn, (double)(t3 - t2) / dn,
                     (double)(t4 - t3) / dn };
        best.encode = t.encode < best.encode ? t.encode : best.encode;
        best.sign = t.sign < best.sign ? t.sign : best.sign;
        best.decode = t.decode < best.decode ? t.decode : best.decode;
        best.total = t.total < best.total ? t.total : best.total;
    }
    dl__buf_cleanup(&body);
    return best;
}

int main(int argc, char **argv)
{
    long n = 20000;
    int rounds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--requests"))
            n = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
    }
    if (n < 1 || rounds < 1) {
        fprintf(stderr, "usage: bench_request_cpu [--requests N] [--rounds R]\n");
        return 2;
    }
    ddb_error err;
    fixture f = { 0 };
    /* The endpoint is never contacted: nothing here sends. */
    f.client = ddb_client_new(&(ddb_client_options){ .endpoint = "http://127.0.0.1:9", .region = "us-east-1",
        .access_key_id = "AKIDBENCH", .secret_access_key = "bench-secret", .imds_disabled = true }, &err);
    if (!f.client)
        die("client", &err);
    f.table = ddb_table_open(f.client, "Bench", "pk", NULL, &err);
    if (!f.table)
        die("table", &err);
    if (ddb__cred_get(f.client->creds, &f.cred, NULL, &err) != 0)
        die("credentials", &err);
    f.key = ddb_item_new();
    f.vals = ddb_item_new();
    ddb_item_set_s(f.key, "pk", "bench-0");
    ddb_item_set_s(f.vals, ":owner", "bench");

    for (int op = 0; op < 2; op++) {
        f.update = op == 1;
        measure(&f, n / 10 + 1, 1); /* warm caches and the signing key */
        timing t = measure(&f, n, rounds);
        printf("client=c-inproc op=%s requests=%ld encode_ns=%.0f sign_ns=%.0f decode_ns=%.0f "
               "sum_ns=%.0f total_ns=%.0f\n",
               f.update ? "UpdateItem" : "GetItem", n, t.encode, t.sign, t.decode,
               t.encode + t.sign + t.decode, t.total);
    }
    ddb__credentials_cleanup(&f.cred);
    ddb_item_free(f.vals);
    ddb_item_free(f.key);
    ddb_table_close(f.table);
    ddb_client_free(f.client);
    return 0;
}
