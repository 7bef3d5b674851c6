/* test_alloc.c: every allocation a public call makes may fail, one at a time: the call
 * then returns DDB_ENOMEM (a constructor NULL with err's code DDB_ENOMEM), never another
 * error, never a crash; leaks are the sanitizers' and valgrind's to find. The calls run
 * against an in-process fakedb, whose own threads never fail. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <string.h>

#include <dynalock/coord.h>
#include <fakedb/fakedb.h>

#include "alloc_shim.h"
#include "dl_fixture.h"

typedef int (*scenario_fn)(long n, ddb_error *err);

/* Runs fn with its 1st, 2nd, ... allocation failing, until a run makes none fail. */
static void fail_each(const char *name, scenario_fn fn)
{
    long n;
    for (n = 1;; n++) {
        ddb_error err;
        ddb_error_clear(&err);
        shim_fail_nth(n);
        int rc = fn(n, &err);
        bool fired = shim_fired();
        shim_fail_nth(0);
        if (!fired) {
            ck_assert_msg(rc == 0, "%s: with no failure: %s (%s)", name, ddb_error_name(rc), err.message);
            break;
        }
        ck_assert_msg(rc == 0 || rc == DDB_ENOMEM, "%s: allocation %ld failed: %s (%s)", name, n,
                      ddb_error_name(rc), err.message);
        if (rc == DDB_ENOMEM)
            ck_assert_msg(err.code == DDB_ENOMEM, "%s: allocation %ld: err.code %s", name, n,
                          ddb_error_name(err.code));
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
        if ((rc = (call)) != 0)                                                        \
            goto out;                                                                  \
    } while (0)
/* A call that has no err to fill (item building, adding actions): its code alone. */
#define TRYC(call)                                                                     \
    do {                                                                               \
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
    TRYC(ddb_tx_put(tx, table, item, NULL, NULL, NULL));
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
        rc = ddb_tx_check_lease(tx, lease, &m, NULL);
        ddb_tx_free(tx);
        if (rc != 0) {
            err->code = rc;
            goto out;
        }
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
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
