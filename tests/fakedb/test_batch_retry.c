/* test_batch_retry.c: a real client's retry of unprocessed batch entries, end to end:
 * libddb's ddb_table_batch_write and ddb_table_batch_get against fakedb with an `unprocessed` fault
 * that leaves some entries unprocessed on the first requests. The client must resend
 * exactly those until all are done. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include <dynalock/ddb.h>
#include <fakedb/fakedb.h>

#include "dl_check.h"
#include "dl_fixture.h"

static ddb_client *client;
static ddb_table *tab;

static void setup(void)
{
    dl_fixture_setup();
    ck_assert_int_eq(dl_fixture_create_table(&dl_fx, "Retry", "pk", NULL), 0);
    client = dl_fixture_client(&dl_fx, &(ddb_client_options){ .retry.base_delay_ms = 1 });
    ck_assert_ptr_nonnull(client);
    ddb_error err;
    tab = ddb_table_open(client, "Retry", "pk", NULL, &err);
    ck_assert_ptr_nonnull(tab);
}

static void teardown(void)
{
    ddb_table_close(tab);
    ddb_client_free(client);
    dl_fixture_teardown();
}

static ddb_item *numbered(int i)
{
    char pk[16];
    snprintf(pk, sizeof pk, "k%02d", i);
    ddb_item *it = ddb_item_new();
    ck_assert_int_eq(ddb_item_set_s(it, "pk", pk), 0);
    return it;
}

START_TEST(batch_write_and_get_retry_unprocessed)
{
    enum { N = 20 };
    ddb_item *items[N];
    for (int i = 0; i < N; i++) {
        items[i] = numbered(i);
        ddb_item_set_i64(items[i], "i", i);
    }
    /* k07 is left unprocessed by the first two requests: three in all. */
    ck_assert_int_gt(fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_UNPROCESSED,
                                                                 .operation = "BatchWriteItem", .key = "k07", .count = 2 }), 0);
    ddb_error err;
    ck_assert_int_eq(ddb_table_batch_write(tab, (const ddb_item *const *)items, N, NULL, 0, NULL, &err), 0);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "BatchWriteItem").requests, 3);

    ck_assert_int_gt(fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_UNPROCESSED,
                                                                 .operation = "BatchGetItem", .count = 1 }), 0);
    ddb_item *keys[N];
    for (int i = 0; i < N; i++)
        keys[i] = numbered(i);
    ddb_item **got = NULL;
    size_t n_got = 0;
    ck_assert_int_eq(ddb_table_batch_get(tab, (const ddb_item *const *)keys, N, true, &got, &n_got, NULL, &err), 0);
    ck_assert_uint_eq(n_got, N);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "BatchGetItem").requests, 2);
    int64_t sum = 0;
    for (size_t i = 0; i < n_got; i++) {
        int64_t v = -1;
        ck_assert_int_eq(ddb_item_get_i64(got[i], "i", &v), 0);
        sum += v;
    }
    ck_assert_int_eq(sum, N * (N - 1) / 2);
    ddb_item_array_free(got, n_got);
    for (int i = 0; i < N; i++) {
        ddb_item_free(items[i]);
        ddb_item_free(keys[i]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakedb_batch_retry");
    TCase *tc = tcase_create("retry");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, batch_write_and_get_retry_unprocessed);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
