/* test_pages.c: Query and Scan page iterators over HTTP against fakedb: key conditions,
 * limits and LastEvaluatedKey, descending order, a start key, filters, an index, and a
 * parallel scan whose segments together see every item once. */
#include <string.h>

#include "client_util.h"

#define N_ITEMS 25

static ddb_client *client;
static ddb_table *orders;

static void setup(void)
{
    dl_fixture_setup();
    client = dl_fixture_client(&dl_fx, NULL);
    ck_assert_ptr_nonnull(client);
    ddb_error err;
    ddb_index_def gsi = { .name = "byStatus", .key = { .pk = "status", .sk = "sk" } };
    ck_assert_int_eq(ddb_client_create_table(client, "Orders", &(ddb_key_schema){ .pk = "pk", .sk = "sk" },
        &(ddb_create_table_options){ .gsi = &gsi, .n_gsi = 1, .wait_active = true }, NULL, &err), 0);
    orders = ddb_table_open(client, "Orders", "pk", "sk", &err);
    ck_assert_ptr_nonnull(orders);
    for (int i = 0; i < N_ITEMS; i++) {
        char sk[8];
        snprintf(sk, sizeof sk, "o%02d", i);
        ddb_item *it = key2(i < 20 ? "c1" : "c2", sk);
        ddb_item_set_i64(it, "i", i);
        if (i % 2 == 0)
            ddb_item_set_s(it, "status", "open"); /* sparse index: odd ones are absent */
        ck_assert_int_eq(ddb_table_put_item(orders, it, NULL, NULL, NULL, &err), 0);
        ddb_item_free(it);
    }
}

static void teardown(void)
{
    ddb_table_close(orders);
    ddb_client_free(client);
    dl_fixture_teardown();
}

/* Runs the iterator to its end; returns items seen, checks the order of sk. */
static int drain(ddb_pages *p, int *pages, bool ascending, int *sum_i)
{
    ddb_error err;
    int n = 0, rc;
    char last[16] = "";
    *pages = 0;
    if (sum_i)
        *sum_i = 0;
    while ((rc = ddb_pages_next(p, &err)) == 1) {
        (*pages)++;
        for (size_t i = 0; i < ddb_pages_count(p); i++) {
            const ddb_item *it = ddb_pages_item(p, i);
            const char *sk = ddb_item_get_s(it, "sk");
            ck_assert_ptr_nonnull(sk);
            if (last[0])
                ck_assert(ascending ? strcmp(last, sk) < 0 : strcmp(last, sk) > 0);
            snprintf(last, sizeof last, "%s", sk);
            int64_t v;
            ck_assert_int_eq(ddb_item_get_i64(it, "i", &v), 0);
            if (sum_i)
                *sum_i += (int)v;
            n++;
        }
        ck_assert(*pages < 100);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(ddb_pages_next(p, &err), 0); /* stays at the end */
    return n;
}

START_TEST(query_pages_with_limit)
{
    ddb_item *vals = ddb_item_new();
    ddb_item_set_s(vals, ":p", "c1");
    ddb_error err;
    ddb_pages *p = ddb_table_query(orders, &(ddb_query_options){ .key_condition = "pk = :p", .values = vals,
                                                          .limit = 7 }, NULL, &err);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(ddb_pages_next(p, &err), 1);
    ck_assert_uint_eq(ddb_pages_count(p), 7);
    const ddb_item *lk = ddb_pages_last_key(p);
    ck_assert_ptr_nonnull(lk);
    ck_assert_str_eq(ddb_item_get_s(lk, "sk"), "o06");
    ddb_pages_free(p);

    p = ddb_table_query(orders, &(ddb_query_options){ .key_condition = "pk = :p", .values = vals, .limit = 7 }, NULL, &err);
    int pages;
    ck_assert_int_eq(drain(p, &pages, true, NULL), 20);
    ck_assert_int_ge(pages, 3);
    ddb_pages_free(p);
    ddb_item_free(vals);
}
END_TEST

START_TEST(query_descending_and_start_key)
{
    ddb_item *vals = ddb_item_new();
    ddb_item_set_s(vals, ":p", "c1");
    ddb_item_set_s(vals, ":lo", "o10");
    ddb_error err;
    int pages;
    ddb_pages *p = ddb_table_query(orders, &(ddb_query_options){ .key_condition = "pk = :p AND sk >= :lo",
        .values = vals, .descending = true, .limit = 4 }, NULL, &err);
    ck_assert_int_eq(drain(p, &pages, false, NULL), 10);
    ddb_pages_free(p);

    ddb_item_remove(vals, ":lo");
    ddb_item *start = key2("c1", "o14");
    int sum;
    p = ddb_table_query(orders, &(ddb_query_options){ .key_condition = "pk = :p", .values = vals,
        .start_key = start }, NULL, &err);
    ddb_item_free(start); /* copied by ddb_table_query */
    ck_assert_int_eq(drain(p, &pages, true, &sum), 5);
    ck_assert_int_eq(sum, 15 + 16 + 17 + 18 + 19);
    ddb_pages_free(p);
    ddb_item_free(vals);
}
END_TEST

START_TEST(query_filter_and_projection)
{
    ddb_item *vals = ddb_item_new();
    ddb_item_set_s(vals, ":p", "c1");
    ddb_item_set_i64(vals, ":min", 15);
    ddb_error err;
    ddb_pages *p = ddb_table_query(orders, &(ddb_query_options){ .key_condition = "pk = :p",
        .filter = "#i >= :min", .names = (const char *[]){ "#i", "i", NULL }, .values = vals,
        .projection = "sk, #i" }, NULL, &err);
    ck_assert_int_eq(ddb_pages_next(p, &err), 1);
    ck_assert_uint_eq(ddb_pages_count(p), 5);
    ck_assert_uint_eq(ddb_pages_scanned(p), 20);
    ck_assert_ptr_null(ddb_item_get(ddb_pages_item(p, 0), "pk"));
    ddb_pages_free(p);
    ddb_item_free(vals);
}
END_TEST

START_TEST(query_index)
{
    ddb_item *vals = ddb_item_new();
    ddb_item_set_s(vals, ":s", "open");
    ddb_error err;
    int pages;
    ddb_pages *p = ddb_table_query(orders, &(ddb_query_options){ .index = "byStatus",
        .key_condition = "#s = :s", .names = (const char *[]){ "#s", "status", NULL }, .values = vals,
        .limit = 5 }, NULL, &err);
    ck_assert_int_eq(drain(p, &pages, true, NULL), 13); /* even i of 0..24 */
    ddb_pages_free(p);

    p = ddb_table_query(orders, &(ddb_query_options){ .index = "noSuchIndex", .key_condition = "#s = :s",
        .names = (const char *[]){ "#s", "status", NULL }, .values = vals }, NULL, &err);
    ck_assert_int_eq(ddb_pages_next(p, &err), DDB_EVALIDATION);
    ddb_pages_free(p);
    ddb_item_free(vals);
}
END_TEST

START_TEST(scan_all_and_parallel)
{
    ddb_error err;
    int pages, sum;
    ddb_pages *p = ddb_table_scan(orders, &(ddb_query_options){ .limit = 6 }, NULL, &err);
    int n = 0;
    int rc;
    sum = 0;
    while ((rc = ddb_pages_next(p, &err)) == 1) {
        for (size_t i = 0; i < ddb_pages_count(p); i++) {
            int64_t v;
            ddb_item_get_i64(ddb_pages_item(p, i), "i", &v);
            sum += (int)v;
            n++;
        }
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(n, N_ITEMS);
    ck_assert_int_eq(sum, N_ITEMS * (N_ITEMS - 1) / 2);
    ddb_pages_free(p);

    /* Three segments together cover every item exactly once. */
    int total = 0, total_sum = 0;
    for (int seg = 0; seg < 3; seg++) {
        p = ddb_table_scan(orders, &(ddb_query_options){ .segment = seg, .total_segments = 3 }, NULL, &err);
        ck_assert_ptr_nonnull(p);
        n = 0;
        sum = 0;
        while ((rc = ddb_pages_next(p, &err)) == 1) {
            for (size_t i = 0; i < ddb_pages_count(p); i++) {
                int64_t v;
                ddb_item_get_i64(ddb_pages_item(p, i), "i", &v);
                sum += (int)v;
                n++;
            }
        }
        ck_assert_int_eq(rc, 0);
        total += n;
        total_sum += sum;
        ddb_pages_free(p);
    }
    ck_assert_int_eq(total, N_ITEMS);
    ck_assert_int_eq(total_sum, N_ITEMS * (N_ITEMS - 1) / 2);
    (void)pages;
}
END_TEST

START_TEST(bad_iterator_options)
{
    ddb_error err;
    ck_assert_ptr_null(ddb_table_query(orders, NULL, NULL, &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ck_assert_ptr_null(ddb_table_scan(orders, &(ddb_query_options){ .segment = 3, .total_segments = 2 }, NULL, &err));
    ck_assert_ptr_null(ddb_table_scan(orders, &(ddb_query_options){ .limit = -1 }, NULL, &err));
    ck_assert_ptr_null(ddb_table_scan(NULL, NULL, NULL, &err));
    ck_assert_int_eq(ddb_pages_next(NULL, &err), DDB_EINVAL);
    ddb_pages_free(NULL);

    ddb_table *missing = ddb_table_open(client, "Missing", "pk", NULL, &err);
    ddb_pages *p = ddb_table_scan(missing, NULL, NULL, &err);
    ck_assert_int_eq(ddb_pages_next(p, &err), DDB_ENOTFOUND);
    ck_assert_uint_eq(ddb_pages_count(p), 0);
    ddb_pages_free(p);
    ddb_table_close(missing);
}
END_TEST

static Suite *pages_suite(void)
{
    Suite *s = suite_create("client_pages");
    TCase *tc = tcase_create("pages");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, query_pages_with_limit);
    tcase_add_test(tc, query_descending_and_start_key);
    tcase_add_test(tc, query_filter_and_projection);
    tcase_add_test(tc, query_index);
    tcase_add_test(tc, scan_all_and_parallel);
    tcase_add_test(tc, bad_iterator_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(pages_suite());
}
