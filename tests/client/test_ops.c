/* test_ops.c: GetItem, PutItem, UpdateItem and DeleteItem over HTTP against fakedb:
 * conditions, names and values, ReturnValues, the old item on a failed condition, and
 * the errors DynamoDB answers with. */
#include <string.h>

#include "client_util.h"

static ddb_client *client;
static ddb_table *items;

static void setup(void)
{
    dl_fixture_setup();
    ck_assert_int_eq(dl_fixture_create_table(&dl_fx, "Items", "pk", "sk"), 0);
    client = dl_fixture_client(&dl_fx, NULL);
    ck_assert_ptr_nonnull(client);
    ddb_error err;
    items = ddb_table_open(client, "Items", "pk", "sk", &err);
    ck_assert_ptr_nonnull(items);
}

static void teardown(void)
{
    ddb_table_close(items);
    ddb_client_free(client);
    dl_fixture_teardown();
}

static ddb_item *full_item(const char *pk, const char *sk)
{
    ddb_item *it = key2(pk, sk);
    ddb_item_set_n(it, "n", "12.5");
    ddb_item_set_b(it, "b", "\x01\x00\x02", 3);
    ddb_item_set_bool(it, "ok", true);
    ddb_item_set_null(it, "nothing");
    ddb_value *l = ddb_value_l();
    ddb_value_append(l, ddb_value_s("x"));
    ddb_value_append(l, ddb_value_n_i64(3));
    ddb_item_set(it, "list", l);
    ddb_value *m = ddb_value_m();
    ddb_item_set_s(ddb_value_get_m_mut(m), "inner", "v");
    ddb_item_set(it, "map", m);
    ddb_value *ss = ddb_value_ss();
    ddb_value_add_s(ss, "a");
    ddb_value_add_s(ss, "b");
    ddb_item_set(it, "ss", ss);
    ddb_value *ns = ddb_value_ns();
    ddb_value_add_n(ns, "1");
    ddb_value_add_n(ns, "2.5");
    ddb_item_set(it, "ns", ns);
    ddb_value *bs = ddb_value_bs();
    ddb_value_add_b(bs, "z", 1);
    ddb_item_set(it, "bs", bs);
    return it;
}

START_TEST(put_then_get_every_type)
{
    ddb_item *it = full_item("p1", "s1");
    ddb_result res = { 0 };
    ddb_error err;
    ck_assert_int_eq(ddb_table_put_item(items, it, NULL, &res, NULL, &err), 0);
    ck_assert_ptr_null(res.item);
    ck_assert_int_eq(res.retries, 0);

    ddb_item *k = key2("p1", "s1");
    ck_assert_int_eq(ddb_table_get_item(items, k, &(ddb_get_options){ .consistent_read = true }, &res, NULL, &err), 0);
    ck_assert_ptr_nonnull(res.item);
    ck_assert(ddb_item_equal(res.item, it));

    /* A projection with a name placeholder returns only what was asked for. */
    ck_assert_int_eq(ddb_table_get_item(items, k, &(ddb_get_options){
        .projection = "#n, ok", .names = (const char *[]){ "#n", "n", NULL } }, &res, NULL, &err), 0);
    ck_assert_uint_eq(ddb_item_count(res.item), 2);
    ck_assert_str_eq(ddb_item_get_n(res.item, "n"), "12.5");
    ddb_result_cleanup(&res);
    ddb_item_free(k);
    ddb_item_free(it);
}
END_TEST

START_TEST(get_missing_item)
{
    ddb_item *k = key2("none", "none");
    ddb_result res = { 0 };
    ddb_error err;
    ck_assert_int_eq(ddb_table_get_item(items, k, NULL, &res, NULL, &err), 0);
    ck_assert_ptr_null(res.item);
    ck_assert_int_eq(ddb_table_get_item(items, k, NULL, NULL, NULL, &err), 0);
    ddb_item_free(k);
}
END_TEST

START_TEST(failed_condition_returns_old_item)
{
    ddb_item *it = key2("p2", "s");
    ddb_item_set_i64(it, "v", 1);
    ddb_error err;
    ck_assert_int_eq(ddb_table_put_item(items, it, NULL, NULL, NULL, &err), 0);

    ddb_item *again = key2("p2", "s");
    ddb_item_set_i64(again, "v", 2);
    ddb_result res = { 0 };
    ddb_write_options wo = { .condition = "attribute_not_exists(pk)", .return_old_on_condition_fail = true };
    int rc = ddb_table_put_item(items, again, &wo, &res, NULL, &err);
    ck_assert_int_eq(rc, DDB_ECONDITION);
    ck_assert_int_eq(err.code, DDB_ECONDITION);
    ck_assert_str_eq(err.aws_type, "ConditionalCheckFailedException");
    ck_assert_int_eq(err.http_status, 400);
    ck_assert(err.message[0] != '\0');
    ck_assert_ptr_nonnull(res.item);
    ck_assert(ddb_item_equal(res.item, it));

    /* Without the flag, no item comes back. */
    wo.return_old_on_condition_fail = false;
    ck_assert_int_eq(ddb_table_put_item(items, again, &wo, &res, NULL, &err), DDB_ECONDITION);
    ck_assert_ptr_null(res.item);

    /* Update and delete deliver it too. */
    ddb_item *k = key2("p2", "s");
    wo = (ddb_write_options){ .condition = "v = :two", .values = again,
                              .return_old_on_condition_fail = true };
    ddb_item *vals = ddb_item_new();
    ddb_item_set_i64(vals, ":two", 2);
    wo.values = vals;
    ck_assert_int_eq(ddb_table_update_item(items, k, "SET v = :two", &wo, &res, NULL, &err), DDB_ECONDITION);
    ck_assert(ddb_item_equal(res.item, it));
    ck_assert_int_eq(ddb_table_delete_item(items, k, &wo, &res, NULL, &err), DDB_ECONDITION);
    ck_assert(ddb_item_equal(res.item, it));

    ddb_result_cleanup(&res);
    ddb_item_free(vals);
    ddb_item_free(k);
    ddb_item_free(again);
    ddb_item_free(it);
}
END_TEST

START_TEST(update_return_values)
{
    ddb_item *k = key2("p3", "s");
    ddb_item *vals = ddb_item_new();
    ddb_item_set_i64(vals, ":inc", 5);
    ddb_item_set_s(vals, ":o", "me");
    ddb_names names = (const char *[]){ "#c", "count", "#o", "owner", NULL };
    ddb_result res = { 0 };
    ddb_error err;
    ck_assert_int_eq(ddb_table_update_item(items, k, "ADD #c :inc SET #o = :o",
        &(ddb_write_options){ .names = names, .values = vals, .return_values = DDB_RETURN_ALL_NEW },
        &res, NULL, &err), 0);
    int64_t c;
    ck_assert_int_eq(ddb_item_get_i64(res.item, "count", &c), 0);
    ck_assert_int_eq(c, 5);
    ck_assert_str_eq(ddb_item_get_s(res.item, "owner"), "me");
    ck_assert_str_eq(ddb_item_get_s(res.item, "pk"), "p3");

    /* DynamoDB refuses names and values an expression does not use. */
    ddb_names cnames = (const char *[]){ "#c", "count", NULL };
    ddb_item_remove(vals, ":o");
    ck_assert_int_eq(ddb_table_update_item(items, k, "ADD #c :inc",
        &(ddb_write_options){ .names = names, .values = vals, .return_values = DDB_RETURN_UPDATED_OLD },
        &res, NULL, &err), DDB_EVALIDATION);
    ck_assert_int_eq(ddb_table_update_item(items, k, "ADD #c :inc",
        &(ddb_write_options){ .names = cnames, .values = vals, .return_values = DDB_RETURN_UPDATED_OLD },
        &res, NULL, &err), 0);
    ck_assert_uint_eq(ddb_item_count(res.item), 1);
    ck_assert_int_eq(ddb_item_get_i64(res.item, "count", &c), 0);
    ck_assert_int_eq(c, 5);

    ck_assert_int_eq(ddb_table_update_item(items, k, "ADD #c :inc",
        &(ddb_write_options){ .names = cnames, .values = vals, .return_values = DDB_RETURN_UPDATED_NEW },
        &res, NULL, &err), 0);
    ck_assert_int_eq(ddb_item_get_i64(res.item, "count", &c), 0);
    ck_assert_int_eq(c, 15);

    /* A condition that holds lets the update through. */
    ddb_item_set_i64(vals, ":fifteen", 15);
    ck_assert_int_eq(ddb_table_update_item(items, k, "ADD #c :inc",
        &(ddb_write_options){ .condition = "#c = :fifteen", .names = cnames, .values = vals,
                              .return_values = DDB_RETURN_ALL_OLD }, &res, NULL, &err), 0);
    ck_assert_int_eq(ddb_item_get_i64(res.item, "count", &c), 0);
    ck_assert_int_eq(c, 15);
    ddb_result_cleanup(&res);
    ddb_item_free(vals);
    ddb_item_free(k);
}
END_TEST

START_TEST(put_and_delete_return_all_old)
{
    ddb_item *it = key2("p4", "s");
    ddb_item_set_s(it, "gen", "1");
    ddb_result res = { 0 };
    ddb_error err;
    ddb_write_options old = { .return_values = DDB_RETURN_ALL_OLD };
    ck_assert_int_eq(ddb_table_put_item(items, it, &old, &res, NULL, &err), 0);
    ck_assert_ptr_null(res.item);
    ddb_item_set_s(it, "gen", "2");
    ck_assert_int_eq(ddb_table_put_item(items, it, &old, &res, NULL, &err), 0);
    ck_assert_str_eq(ddb_item_get_s(res.item, "gen"), "1");

    ddb_item *k = key2("p4", "s");
    ck_assert_int_eq(ddb_table_delete_item(items, k, &old, &res, NULL, &err), 0);
    ck_assert_str_eq(ddb_item_get_s(res.item, "gen"), "2");
    ck_assert_int_eq(ddb_table_get_item(items, k, NULL, &res, NULL, &err), 0);
    ck_assert_ptr_null(res.item);
    /* Deleting what is not there succeeds and returns nothing. */
    ck_assert_int_eq(ddb_table_delete_item(items, k, &old, &res, NULL, &err), 0);
    ck_assert_ptr_null(res.item);

    ck_assert_int_eq(ddb_table_put_item(items, it, &(ddb_write_options){ .return_values = DDB_RETURN_ALL_NEW },
                                  &res, NULL, &err), DDB_EINVAL);
    ddb_result_cleanup(&res);
    ddb_item_free(k);
    ddb_item_free(it);
}
END_TEST

/* ddb_table_name is the table's own copy of the name it was opened with, and requests
 * through the handle name that table whatever becomes of the caller's string. */
START_TEST(table_name_is_the_handles_copy)
{
    ddb_error err;
    char name[16];
    snprintf(name, sizeof name, "%s", "Items");
    ddb_table *t = ddb_table_open(client, name, "pk", "sk", &err);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(ddb_table_name(t), "Items");
    ck_assert_ptr_ne(ddb_table_name(t), name);
    snprintf(name, sizeof name, "%s", "Other");
    ck_assert_str_eq(ddb_table_name(t), "Items");
    ck_assert_str_eq(ddb_table_name(items), "Items");
    ddb_item *it = key2("named", "1");
    ck_assert_int_eq(ddb_table_put_item(t, it, NULL, NULL, NULL, &err), 0);
    ddb_result res = {0};
    ck_assert_int_eq(ddb_table_get_item(items, it, &(ddb_get_options){.consistent_read = true},
                                        &res, NULL, &err), 0);
    ck_assert_ptr_nonnull(res.item);
    ddb_result_cleanup(&res);
    ddb_item_free(it);
    ddb_table_close(t);
}
END_TEST

START_TEST(service_errors)
{
    ddb_error err;
    ddb_table *missing = ddb_table_open(client, "NoSuchTable", "pk", "sk", &err);
    ddb_item *k = key2("a", "b");
    ck_assert_int_eq(ddb_table_get_item(missing, k, NULL, NULL, NULL, &err), DDB_ENOTFOUND);
    ck_assert_str_eq(err.aws_type, "ResourceNotFoundException");
    ck_assert_int_eq(err.http_status, 400);
    ck_assert_int_eq(err.retries, 0);
    ddb_table_close(missing);

    /* A key without its sort key, and a broken expression, are ValidationExceptions. */
    ddb_item *partial = key2("a", NULL);
    ck_assert_int_eq(ddb_table_get_item(items, partial, NULL, NULL, NULL, &err), DDB_EVALIDATION);
    ck_assert_str_eq(err.aws_type, "ValidationException");
    ck_assert_int_eq(ddb_table_update_item(items, k, "SET = oops", NULL, NULL, NULL, &err), DDB_EVALIDATION);
    ck_assert(strlen(err.message) > 0);

    ck_assert_int_eq(ddb_table_get_item(NULL, k, NULL, NULL, NULL, &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_table_put_item(items, NULL, NULL, NULL, NULL, &err), DDB_EINVAL);
    ck_assert_str_eq(err.aws_type, "");
    ddb_item_free(partial);
    ddb_item_free(k);
}
END_TEST

START_TEST(raw_call)
{
    char *out = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_client_call(client, "PutItem",
        "{\"TableName\":\"Items\",\"Item\":{\"pk\":{\"S\":\"r\"},\"sk\":{\"S\":\"1\"}}}", &out, NULL, &err), 0);
    ck_assert_ptr_nonnull(out);
    free(out);
    ck_assert_int_eq(ddb_client_call(client, "GetItem",
        "{\"TableName\":\"Items\",\"Key\":{\"pk\":{\"S\":\"r\"},\"sk\":{\"S\":\"1\"}}}", &out, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"Item\""));
    free(out);
    ck_assert_int_eq(ddb_client_call(client, "GetItem", "{\"TableName\":\"Nope\",\"Key\":{}}", &out, NULL, &err),
                     DDB_ENOTFOUND);
    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(strstr(out, "ResourceNotFoundException"));
    free(out);
    ck_assert_int_eq(ddb_client_call(client, "GetItem", "not json", &out, NULL, &err), DDB_EVALIDATION);
    free(out);
}
END_TEST

static Suite *ops_suite(void)
{
    Suite *s = suite_create("client_ops");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, put_then_get_every_type);
    tcase_add_test(tc, get_missing_item);
    tcase_add_test(tc, failed_condition_returns_old_item);
    tcase_add_test(tc, update_return_values);
    tcase_add_test(tc, put_and_delete_return_all_old);
    tcase_add_test(tc, table_name_is_the_handles_copy);
    tcase_add_test(tc, service_errors);
    tcase_add_test(tc, raw_call);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(ops_suite());
}
