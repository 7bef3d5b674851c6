/* test_alloc.c: every allocation a public call makes may fail, one at a time: the call
 * then returns DDB_ENOMEM (a constructor NULL with err's code DDB_ENOMEM), never another
 * error, never a crash; leaks are the sanitizers' and valgrind's to find. The calls run
 * against an in-process fakedb, whose own threads never fail. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <string.h>

#include <dynalock/coord.h>
#include <dynalock/testing.h>
#include <fakedb/fakedb.h>

#include "alloc_shim.h"
#include "dl_fixture.h"

typedef int (*scenario_fn)(long n, ddb_error *err);

/* The last call a scenario made through TRY/TRYC, named in a failure's message. */
static const char *last_call = "";

/* Runs fn with its 1st, 2nd, ... allocation failing, until a run makes none fail. */
static void fail_each(const char *name, scenario_fn fn)
{
    long n;
    for (n = 1;; n++) {
        ddb_error err;
        ddb_error_clear(&err);
        last_call = "(the scenario's start)";
        shim_fail_nth(n);
        int rc = fn(n, &err);
        bool fired = shim_fired();
        shim_fail_nth(0);
        if (!fired) {
            ck_assert_msg(rc == 0, "%s: with no failure: %s (%s)", name, ddb_error_name(rc), err.message);
            break;
        }
        ck_assert_msg(rc == 0 || rc == DDB_ENOMEM, "%s: allocation %ld failed in %s: %s (%s)",
                      name, n, last_call, ddb_error_name(rc), err.message);
        if (rc == DDB_ENOMEM)
            ck_assert_msg(err.code == DDB_ENOMEM, "%s: allocation %ld in %s: err.code %s", name,
                          n, last_call, ddb_error_name(err.code));
    }
    fprintf(stderr, "%s: %ld allocations, each failed once\n", name, n - 1);
}

/* A constructor's NULL, or a status, as the scenario's status. */
#define NEED(p, err)                                                                   \
    do {                                                                               \
        if (!(p)) {                                                                    \
            rc = (err)->code ? (err)->code : DDB_ENOMEM;                               \
            if (!(err)->code)                                                          \
                (err)->code = DDB_ENOMEM;                                              \
            goto out;                                                                  \
        }                                                                              \
    } while (0)
/* A call that fills err. */
#define TRY(call)                                                                      \
    do {                                                                               \
        last_call = #call;                                                             \
        if ((rc = (call)) != 0)                                                        \
            goto out;                                                                  \
    } while (0)
/* A call that has no err to fill (item building, adding actions): its code alone. */
#define TRYC(call)                                                                     \
    do {                                                                               \
        last_call = #call;                                                             \
        if ((rc = (call)) != 0) {                                                      \
            err->code = rc;                                                            \
            goto out;                                                                  \
        }                                                                              \
    } while (0)

static ddb_client *client;
static ddb_table *table;

static void setup(void)
{
    dl_fixture_setup();
    ck_assert_int_eq(dl_fixture_create_table(&dl_fx, "Shop", "pk", "sk"), 0);
    client = dl_fixture_client(&dl_fx, &(ddb_client_options){.retry.max_attempts = DDB_NO_RETRIES,
                                                              .log_level = DDB_LOG_OFF});
    ddb_error err;
    table = ddb_table_open(client, "Shop", "pk", "sk", &err);
    ck_assert_ptr_nonnull(table);
}

static void teardown(void)
{
    ddb_table_close(table);
    ddb_client_free(client);
    dl_fixture_teardown();
}

/* ----------------------------------------------------------------- values */

static int items(long n, ddb_error *err)
{
    (void)n;
    int rc = 0;
    ddb_item *it = NULL, *back = NULL, *copy = NULL;
    char *json = NULL;
    ddb_value *list = NULL, *set = NULL;
    it = ddb_item_new();
    NEED(it, err);
    TRYC(ddb_item_set_s(it, "pk", "ORDER#1"));
    TRYC(ddb_item_set_n(it, "qty", "12.50"));
    TRYC(ddb_item_set_b(it, "blob", "\x01\x02", 2));
    list = ddb_value_l();
    NEED(list, err);
    ddb_value *e = ddb_value_s("x");
    NEED(e, err);
    TRYC(ddb_value_append(list, e));
    rc = ddb_item_set(it, "list", list); /* takes the value, also on failure */
    list = NULL;
    if (rc != 0) {
        err->code = rc;
        goto out;
    }
    set = ddb_value_ns();
    NEED(set, err);
    TRYC(ddb_value_add_n(set, "1"));
    rc = ddb_item_set(it, "nums", set);
    set = NULL;
    if (rc != 0) {
        err->code = rc;
        goto out;
    }
    json = ddb_item_to_json(it);
    NEED(json, err);
    back = ddb_item_from_json(json, strlen(json), err);
    NEED(back, err);
    copy = ddb_item_copy(back);
    NEED(copy, err);
    if (!ddb_item_equal(it, copy)) /* no check macros while the shim is armed */
        rc = err->code = DDB_EPROTOCOL;
out:
    if (rc == DDB_ENOMEM && err->code == 0)
        err->code = DDB_ENOMEM;
    ddb_value_free(list);
    ddb_value_free(set);
    free(json);
    ddb_item_free(it);
    ddb_item_free(back);
    ddb_item_free(copy);
    return rc;
}

START_TEST(values_and_items)
{
    fail_each("items", items);
}
END_TEST

/* ----------------------------------------------------------------- client */

static int client_life(long n, ddb_error *err)
{
    (void)n;
    int rc = 0;
    ddb_table *t = NULL;
    ddb_client *c = ddb_client_new(&(ddb_client_options){.endpoint = dl_fx.endpoint,
                                                         .region = "us-east-1",
                                                         .access_key_id = "AKIDALLOC",
                                                         .secret_access_key = "alloc",
                                                         .imds_disabled = true,
                                                         .log_level = DDB_LOG_OFF},
                                   err);
    NEED(c, err);
    t = ddb_table_open(c, "Shop", "pk", "sk", err);
    NEED(t, err);
out:
    ddb_table_close(t);
    ddb_client_free(c);
    return rc;
}

START_TEST(client_new_and_table_open)
{
    fail_each("client", client_life);
}
END_TEST

static int operations(long n, ddb_error *err)
{
    int rc = 0;
    ddb_item *item = NULL, *key = NULL, *vals = NULL;
    ddb_result res = {0};
    ddb_pages *pages = NULL;
    char pk[32];
    snprintf(pk, sizeof pk, "ORDER#%ld", n);
    item = ddb_item_new();
    NEED(item, err);
    TRYC(ddb_item_set_s(item, "pk", pk));
    TRYC(ddb_item_set_s(item, "sk", "A"));
    TRYC(ddb_item_set_i64(item, "qty", 1));
    TRY(ddb_table_put_item(table, item, NULL, NULL, NULL, err));
    key = ddb_item_new();
    NEED(key, err);
    TRYC(ddb_item_set_s(key, "pk", pk));
    TRYC(ddb_item_set_s(key, "sk", "A"));
    TRY(ddb_table_get_item(table, key, &(ddb_get_options){.consistent_read = true}, &res, NULL, err));
    ddb_result_cleanup(&res);
    vals = ddb_item_new();
    NEED(vals, err);
    TRYC(ddb_item_set_i64(vals, ":one", 1));
    TRY(ddb_table_update_item(table, key, "ADD qty :one",
                        &(ddb_write_options){.values = vals,
                                             .return_values = DDB_RETURN_ALL_NEW},
                        &res, NULL, err));
    ddb_result_cleanup(&res);
    pages = ddb_table_query(table,
                      &(ddb_query_options){.key_condition = "pk = :p",
                                           .values = key ? NULL : NULL}, NULL,
                      err);
    ddb_pages_free(pages);
    pages = NULL;
    TRY(ddb_table_delete_item(table, key, NULL, NULL, NULL, err));
out:
    ddb_result_cleanup(&res);
    ddb_pages_free(pages);
    ddb_item_free(item);
    ddb_item_free(key);
    ddb_item_free(vals);
    return rc == DDB_EVALIDATION ? 0 : rc;
}

START_TEST(item_operations)
{
    fail_each("operations", operations);
}
END_TEST

static int transaction(long n, ddb_error *err)
{
    int rc = 0;
    ddb_tx *tx = NULL;
    ddb_item *item = NULL;
    char pk[32];
    snprintf(pk, sizeof pk, "TX#%ld", n);
    tx = ddb_tx_new(client);
    NEED(tx, err);
    item = ddb_item_new();
    NEED(item, err);
    TRYC(ddb_item_set_s(item, "pk", pk));
    TRYC(ddb_item_set_s(item, "sk", "A"));
    TRY(ddb_tx_put(tx, table, item, NULL, NULL, err));
    TRY(ddb_tx_send(tx, NULL, err));
out:
    ddb_tx_free(tx);
    ddb_item_free(item);
    return rc;
}

START_TEST(transactions)
{
    fail_each("transaction", transaction);
}
END_TEST

/* ------------------------------------------------------------------ locks */

static int locks(long n, ddb_error *err)
{
    int rc = 0;
    ddb_lease *lease = NULL;
    char name[32];
    snprintf(name, sizeof name, "lock-%ld", n);
    ddb_lock_table *l = ddb_lock_table_new(table, &(ddb_lock_table_options){.holder_label = "pod"}, err);
    NEED(l, err);
    TRY(ddb_lock_try_acquire(l, name, 30000, &lease, NULL, err));
    if (lease) {
        bool held = false;
        TRY(ddb_lease_renew(lease, &held, NULL, err));
        ddb_tx *tx = ddb_tx_new(client);
        NEED(tx, err);
        ddb_tx_marker m;
        rc = ddb_tx_check_lease(tx, lease, &m, err);
        ddb_tx_free(tx);
        if (rc != 0)
            goto out;
    }
out:
    ddb_lease_release(lease);
    ddb_lock_table_free(l);
    return rc;
}

START_TEST(lock_calls)
{
    fail_each("locks", locks);
}
END_TEST

/* ------------------------------------------------- pages, batches, admin */

static ddb_item *order(const char *pk, const char *sk)
{
    ddb_item *it = ddb_item_new();
    if (it && (ddb_item_set_s(it, "pk", pk) != 0 || ddb_item_set_s(it, "sk", sk) != 0)) {
        ddb_item_free(it);
        return NULL;
    }
    return it;
}

static int pages_and_batches(long n, ddb_error *err)
{
    int rc = 0;
    char pk[32];
    snprintf(pk, sizeof pk, "BATCH#%ld", n);
    ddb_item *puts[3] = {0}, *vals = NULL, **got = NULL;
    size_t n_got = 0;
    ddb_pages *pages = NULL;
    ddb_tx *tx = NULL;
    for (int i = 0; i < 3; i++) {
        char sk[8];
        snprintf(sk, sizeof sk, "%d", i);
        puts[i] = order(pk, sk);
        NEED(puts[i], err);
    }
    TRY(ddb_table_batch_write(table, (const ddb_item *const *)puts, 3, NULL, 0, NULL, err));
    TRY(ddb_table_batch_get(table, (const ddb_item *const *)puts, 3, true, &got, &n_got, NULL,
                            err));
    ddb_item_array_free(got, n_got);
    got = NULL;
    vals = ddb_item_new();
    NEED(vals, err);
    TRYC(ddb_item_set_s(vals, ":p", pk));
    pages = ddb_table_query(table, &(ddb_query_options){.key_condition = "pk = :p",
                                                        .values = vals, .limit = 2},
                            NULL, err);
    NEED(pages, err);
    for (;;) {
        rc = ddb_pages_next(pages, err);
        if (rc <= 0)
            break;
    }
    if (rc < 0)
        goto out;
    rc = 0;
    ddb_pages_free(pages);
    /* one page of a Scan: the table grows by a few items per run */
    pages = ddb_table_scan(table, &(ddb_query_options){.limit = 5}, NULL, err);
    NEED(pages, err);
    if ((rc = ddb_pages_next(pages, err)) < 0)
        goto out;
    rc = 0;
    ddb_table *tables[2] = {table, table};
    TRY(ddb_client_transact_get(client, tables, (const ddb_item *const *)puts, 2, &got, NULL,
                                err));
    ddb_item_array_free(got, 2);
    got = NULL;
    tx = ddb_tx_new(client);
    NEED(tx, err);
    TRY(ddb_tx_delete(tx, table, puts[0], NULL, NULL, err));
    TRY(ddb_tx_update(tx, table, puts[1], "SET qty = :q",
                      &(ddb_tx_options){.values = vals}, NULL, err));
    TRY(ddb_tx_check(tx, table, puts[2], &(ddb_tx_options){.condition = "attribute_exists(pk)"},
                     NULL, err));
    TRYC(ddb_tx_set_token(tx, pk));
    last_call = "ddb_tx_send";
    rc = ddb_tx_send(tx, NULL, err);
    if (rc == DDB_EVALIDATION) /* :q is not among the values: the server says so */
        rc = 0;
    last_call = "ddb_table_batch_write (deletes)";
    if (rc == 0)
        rc = ddb_table_batch_write(table, NULL, 0, (const ddb_item *const *)puts, 3, NULL, err);
out:
    ddb_tx_free(tx);
    ddb_pages_free(pages);
    ddb_item_array_free(got, n_got);
    ddb_item_free(vals);
    for (int i = 0; i < 3; i++)
        ddb_item_free(puts[i]);
    return rc;
}

START_TEST(pages_batches_transact_get)
{
    fail_each("pages_and_batches", pages_and_batches);
}
END_TEST

static int admin(long n, ddb_error *err)
{
    int rc = 0;
    char name[32], *answer = NULL;
    snprintf(name, sizeof name, "Admin%ld", n);
    ddb_index_def gsi = {.name = "byOwner", .key = {.pk = "owner"},
                         .projection = DDB_PROJECT_INCLUDE,
                         .include = (const char *const[]){"qty", NULL}};
    TRY(ddb_client_create_table(client, name, &(ddb_key_schema){.pk = "pk", .sk = "sk"},
                                &(ddb_create_table_options){.gsi = &gsi, .n_gsi = 1,
                                                            .ttl_attribute = "expires",
                                                            .wait_active = true},
                                NULL, err));
    ddb_table_info info;
    TRY(ddb_client_describe_table(client, name, &info, NULL, err));
    TRY(ddb_client_call(client, "DescribeTable", "{\"TableName\":\"Shop\"}", &answer, NULL, err));
    TRY(ddb_client_delete_table(client, name, NULL, err));
out:
    free(answer);
    if (rc != 0) {
        ddb_error ignored;
        ddb_client_delete_table(client, name, NULL, &ignored);
    }
    return rc;
}

START_TEST(table_admin)
{
    fail_each("admin", admin);
}
END_TEST

/* --------------------------------------------------------- clocks, cancel */

static int clocks(long n, ddb_error *err)
{
    (void)n;
    int rc = 0;
    ddb_cancel *a = NULL, *b = NULL, *both = NULL;
    ddb_clock *fake = ddb_fake_clock_new(1700000000000);
    NEED(fake, err);
    a = ddb_cancel_new();
    NEED(a, err);
    b = ddb_cancel_new_linked(a);
    NEED(b, err);
    both = ddb_cancel_new_linked2(a, b);
    NEED(both, err);
    if ((rc = ddb_cancel_after(both, fake, 1000)) != 0) {
        err->code = rc;
        goto out;
    }
    TRYC(ddb_fake_clock_advance(fake, 1000));
    if (!ddb_cancel_is_set(both)) /* no check macros while the shim is armed */
        rc = err->code = DDB_ESTATE;
out:
    ddb_cancel_unref(both);
    ddb_cancel_unref(b);
    ddb_cancel_unref(a);
    ddb_clock_unref(fake);
    return rc;
}

START_TEST(clocks_and_cancel_tokens)
{
    fail_each("clocks", clocks);
}
END_TEST

/* ----------------------------------------------------------------- leader */

static int leader_work(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    (void)lease;
    (void)stop;
    (void)err;
    ++*(int *)arg;
    return 0;
}

static int leader(long n, ddb_error *err)
{
    int rc = 0, runs = 0;
    char name[32];
    snprintf(name, sizeof name, "leader-%ld", n);
    ddb_lease *lease = NULL;
    ddb_lock_table *l = ddb_lock_table_new(table, NULL, err);
    NEED(l, err);
    TRY(ddb_lock_run_as_leader(l, name, 30000, leader_work, &runs, NULL, err));
    snprintf(name, sizeof name, "wait-%ld", n);
    TRY(ddb_lock_acquire(l, name, 30000, &lease, NULL, err));
out:
    ddb_lease_release(lease);
    ddb_lock_table_free(l);
    return rc;
}

START_TEST(leader_calls)
{
    fail_each("leader", leader);
}
END_TEST

/* ---------------------------------------------------------------- testing */

/* The server itself is started unarmed: fakedb's in-process calls are fakedb's suite. */
static ddb_test_server *server;

static int test_server(long n, ddb_error *err)
{
    (void)n;
    int rc = 0;
    ddb_table *t = NULL;
    ddb_lock_table *l = NULL;
    ddb_client *c = ddb_test_server_client_new(server, NULL, err);
    NEED(c, err);
    t = ddb_table_open(c, "Locks", "pk", NULL, err);
    NEED(t, err);
    l = ddb_lock_table_new(t, NULL, err);
    NEED(l, err);
    TRY(ddb_lock_simulate_holder(l, "job", 30000, "crashed", NULL, err));
    TRYC(ddb_test_server_advance(server, 1000));
    TRY(ddb_lock_simulate_release(l, "job", err));
out:
    ddb_lock_table_free(l);
    ddb_table_close(t);
    ddb_client_free(c);
    return rc;
}

START_TEST(testing_library)
{
    ddb_error err;
    server = ddb_test_server_start(&(ddb_test_server_options){.log_level = DDB_LOG_OFF}, &err);
    ck_assert_msg(server != NULL, "%s", err.message);
    ck_assert_int_eq(ddb_test_server_create_table(server, "Locks", "pk", NULL, &err), 0);
    fail_each("testing", test_server);
    ddb_test_server_stop(server);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("alloc");
    TCase *tc = tcase_create("alloc");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, values_and_items);
    tcase_add_test(tc, client_new_and_table_open);
    tcase_add_test(tc, item_operations);
    tcase_add_test(tc, transactions);
    tcase_add_test(tc, lock_calls);
    tcase_add_test(tc, pages_batches_transact_get);
    tcase_add_test(tc, table_admin);
    tcase_add_test(tc, clocks_and_cancel_tokens);
    tcase_add_test(tc, leader_calls);
    tcase_add_test(tc, testing_library);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
