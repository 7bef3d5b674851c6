/* test_tx.c: transactions over HTTP against fakedb: a write transaction across two
 * tables, a cancelled one with per-action reasons and the old item, an idempotency
 * token, a poisoned builder, and TransactGetItems. */
#include <string.h>

#include "client_util.h"
#include "internal.h"

static ddb_client *client;
static ddb_table *a, *b;

static void setup(void)
{
    dl_fixture_setup();
    ck_assert_int_eq(dl_fixture_create_table(&dl_fx, "TxA", "pk", "sk"), 0);
    ck_assert_int_eq(dl_fixture_create_table(&dl_fx, "TxB", "pk", NULL), 0);
    client = dl_fixture_client(&dl_fx, NULL);
    ck_assert_ptr_nonnull(client);
    ddb_error err;
    a = ddb_table_open(client, "TxA", "pk", "sk", &err);
    b = ddb_table_open(client, "TxB", "pk", NULL, &err);
}

static void teardown(void)
{
    ddb_table_close(a);
    ddb_table_close(b);
    ddb_client_free(client);
    dl_fixture_teardown();
}

static void put(ddb_table *t, const char *pk, const char *sk, int64_t v)
{
    ddb_item *it = key2(pk, sk);
    ddb_item_set_i64(it, "v", v);
    ddb_error err;
    ck_assert_int_eq(ddb_table_put_item(t, it, NULL, NULL, NULL, &err), 0);
    ddb_item_free(it);
}

static int64_t get_v(ddb_table *t, const char *pk, const char *sk)
{
    ddb_item *k = key2(pk, sk);
    ddb_result res = { 0 };
    ddb_error err;
    ck_assert_int_eq(ddb_table_get_item(t, k, NULL, &res, NULL, &err), 0);
    int64_t v = -1;
    if (res.item)
        ck_assert_int_eq(ddb_item_get_i64(res.item, "v", &v), 0);
    ddb_result_cleanup(&res);
    ddb_item_free(k);
    return v;
}

START_TEST(write_transaction_applies_all)
{
    put(a, "x", "1", 1);
    put(b, "gone", NULL, 9);
    ddb_tx *tx = ddb_tx_new(client);
    ddb_item *newit = key2("y", "1");
    ddb_item_set_i64(newit, "v", 7);
    ddb_item *kx = key2("x", "1"), *kgone = key2("gone", NULL);
    ddb_item *vals = ddb_item_new();
    ddb_item_set_i64(vals, ":one", 1);
    ddb_tx_marker m[4];
    ck_assert_int_eq(ddb_tx_put(tx, a, newit, &(ddb_tx_options){ .condition = "attribute_not_exists(pk)" }, &m[0], NULL), 0);
    ck_assert_int_eq(ddb_tx_update(tx, a, kx, "ADD v :one", &(ddb_tx_options){ .values = vals }, &m[1], NULL), 0);
    ck_assert_int_eq(ddb_tx_delete(tx, b, kgone, NULL, &m[2], NULL), 0);
    ddb_item *kcheck = key2("check", NULL);
    ck_assert_int_eq(ddb_tx_check(tx, b, kcheck, &(ddb_tx_options){ .condition = "attribute_not_exists(pk)" }, &m[3], NULL), 0);
    ck_assert_uint_eq(ddb_tx_count(tx), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(m[i].index, i);
    ddb_error err;
    ck_assert_int_eq(ddb_tx_send(tx, NULL, &err), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(ddb_tx_reason_for(tx, m[i]), DDB_TXFAIL_NONE);
    ck_assert_int_eq(get_v(a, "y", "1"), 7);
    ck_assert_int_eq(get_v(a, "x", "1"), 2);
    ck_assert_int_eq(get_v(b, "gone", NULL), -1);
    ddb_tx_free(tx);
    ddb_item_free(kcheck);
    ddb_item_free(vals);
    ddb_item_free(kx);
    ddb_item_free(kgone);
    ddb_item_free(newit);
}
END_TEST

START_TEST(cancelled_transaction_reasons)
{
    put(a, "held", "1", 5);
    ddb_tx *tx = ddb_tx_new(client);
    ddb_item *k = key2("held", "1");
    ddb_item *vals = ddb_item_new();
    ddb_item_set_i64(vals, ":want", 6);
    ddb_tx_marker check, write;
    ck_assert_int_eq(ddb_tx_check(tx, a, k, &(ddb_tx_options){ .condition = "v = :want", .values = vals,
        .return_old_on_condition_fail = true }, &check, NULL), 0);
    ddb_item *other = key2("other", NULL);
    ck_assert_int_eq(ddb_tx_put(tx, b, other, NULL, &write, NULL), 0);
    ddb_error err;
    ck_assert_int_eq(ddb_tx_send(tx, NULL, &err), DDB_ETXCANCELED);
    ck_assert_str_eq(err.aws_type, "TransactionCanceledException");
    ck_assert_int_eq(ddb_tx_reason_for(tx, check), DDB_TXFAIL_CONDITIONAL_CHECK_FAILED);
    ck_assert_int_eq(ddb_tx_reason_for(tx, write), DDB_TXFAIL_NONE);
    const ddb_item *old = ddb_tx_item_for(tx, check);
    ck_assert_ptr_nonnull(old);
    int64_t v;
    ck_assert_int_eq(ddb_item_get_i64(old, "v", &v), 0);
    ck_assert_int_eq(v, 5);
    ck_assert_ptr_null(ddb_tx_item_for(tx, write));
    ck_assert_int_eq(get_v(b, "other", NULL), -1); /* nothing applied */
    ck_assert_int_eq(ddb_tx_reason_for(tx, (ddb_tx_marker){ 99 }), DDB_TXFAIL_NONE);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "TransactWriteItems").condition_failures, 1);
    ddb_tx_free(tx);
    ddb_item_free(other);
    ddb_item_free(vals);
    ddb_item_free(k);
}
END_TEST

START_TEST(idempotency_token)
{
    put(a, "ctr", "1", 0);
    ddb_tx *tx = ddb_tx_new(client);
    ddb_item *k = key2("ctr", "1");
    ddb_item *vals = ddb_item_new();
    ddb_item_set_i64(vals, ":one", 1);
    ck_assert_int_eq(ddb_tx_update(tx, a, k, "ADD v :one", &(ddb_tx_options){ .values = vals }, NULL, NULL), 0);
    ck_assert_int_eq(ddb_tx_set_token(tx, "token-0123456789"), 0);
    ck_assert_int_eq(ddb_tx_set_token(tx, "0123456789012345678901234567890123456789"), DDB_EINVAL);
    ddb_error err;
    ck_assert_int_eq(ddb_tx_send(tx, NULL, &err), 0);
    ck_assert_int_eq(ddb_tx_send(tx, NULL, &err), 0); /* the same token: applied once */
    ck_assert_int_eq(get_v(a, "ctr", "1"), 1);
    ddb_tx_free(tx);
    ddb_item_free(vals);
    ddb_item_free(k);
}
END_TEST

START_TEST(poisoned_and_invalid_builders)
{
    ddb_tx *tx = ddb_tx_new(client);
    ddb_error err;
    ck_assert_int_eq(ddb_tx_send(tx, NULL, &err), DDB_EINVAL); /* empty */
    ddb_item *k = key2("p", "1");
    ddb_tx_marker m;
    ck_assert_int_eq(ddb_tx_check(tx, a, k, NULL, &m, NULL), DDB_EINVAL); /* no condition */
    ck_assert_int_eq(m.index, -1);
    ck_assert_int_eq(ddb_tx_update(tx, a, k, NULL, NULL, &m, NULL), DDB_EINVAL);
    ck_assert_int_eq(ddb_tx_put(tx, NULL, k, NULL, &m, NULL), DDB_EINVAL);
    ck_assert_int_eq(ddb_tx_put(tx, a, k, NULL, &m, NULL), 0);

    ddb_error poison;
    ddb_error_clear(&poison);
    poison.code = DDB_ELOST;
    snprintf(poison.message, sizeof poison.message, "the lease of lock L on table T is lost");
    ddb__tx_set_error(tx, &poison);
    long before = fakedb_get_stats(dl_fx.db, "TransactWriteItems").requests;
    ck_assert_int_eq(ddb_tx_send(tx, NULL, &err), DDB_ELOST);
    ck_assert_str_eq(err.message, poison.message);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "TransactWriteItems").requests, before);
    ddb_tx_free(tx);
    ddb_tx_free(NULL);
    ddb_item_free(k);
}
END_TEST

START_TEST(transact_get)
{
    put(a, "g", "1", 11);
    put(b, "g", NULL, 22);
    ddb_item *k1 = key2("g", "1"), *k2 = key2("g", NULL), *k3 = key2("absent", NULL);
    ddb_table *tables[] = { a, b, b };
    const ddb_item *keys[] = { k1, k2, k3 };
    ddb_item **out = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_client_transact_get(client, tables, keys, 3, &out, NULL, &err), 0);
    int64_t v;
    ck_assert_int_eq(ddb_item_get_i64(out[0], "v", &v), 0);
    ck_assert_int_eq(v, 11);
    ck_assert_int_eq(ddb_item_get_i64(out[1], "v", &v), 0);
    ck_assert_int_eq(v, 22);
    ck_assert_ptr_null(out[2]);
    ddb_item_array_free(out, 3);
    ck_assert_int_eq(ddb_client_transact_get(client, tables, keys, 0, &out, NULL, &err), DDB_EINVAL);
    ddb_item_free(k1);
    ddb_item_free(k2);
    ddb_item_free(k3);
}
END_TEST

static Suite *tx_suite(void)
{
    Suite *s = suite_create("client_tx");
    TCase *tc = tcase_create("tx");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, write_transaction_applies_all);
    tcase_add_test(tc, cancelled_transaction_reasons);
    tcase_add_test(tc, idempotency_token);
    tcase_add_test(tc, poisoned_and_invalid_builders);
    tcase_add_test(tc, transact_get);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(tx_suite());
}
