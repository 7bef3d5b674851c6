/* test_admin.c: table administration over HTTP against fakedb: CreateTable with keys
 * of each type, indexes, billing and a time to live; DescribeTable; DeleteTable;
 * waiting for ACTIVE; and the errors for tables that exist or do not. */
#include <string.h>

#include "client_util.h"

static ddb_client *client;

static void setup(void)
{
    dl_fixture_setup();
    client = dl_fixture_client(&dl_fx, NULL);
    ck_assert_ptr_nonnull(client);
}

static void teardown(void)
{
    ddb_client_free(client);
    dl_fixture_teardown();
}

START_TEST(create_describe_delete)
{
    ddb_error err;
    ddb_index_def gsi[] = {
        { .name = "gsi1", .key = { .pk = "gpk", .pk_type = DDB_N }, .projection = DDB_PROJECT_KEYS_ONLY },
        { .name = "gsi2", .key = { .pk = "gpk2", .sk = "sk", .sk_type = DDB_B }, .projection = DDB_PROJECT_INCLUDE,
          .include = (const char *[]){ "a", "b", NULL } },
    };
    ddb_index_def lsi = { .name = "lsi1", .key = { .pk = "pk", .pk_type = DDB_N, .sk = "lsk" } };
    ddb_key_schema key = { .pk = "pk", .pk_type = DDB_N, .sk = "sk", .sk_type = DDB_B };
    ck_assert_msg(ddb_client_create_table(client, "Admin", &key, &(ddb_create_table_options){
        .gsi = gsi, .n_gsi = 2, .lsi = &lsi, .n_lsi = 1, .provisioned = true, .read_capacity = 5,
        .write_capacity = 5, .ttl_attribute = "expires", .wait_active = true }, NULL, &err) == 0,
        "CreateTable failed: %s", err.message);

    ddb_table_info info;
    ck_assert_int_eq(ddb_client_describe_table(client, "Admin", &info, NULL, &err), 0);
    ck_assert_str_eq(info.status, "ACTIVE");
    ck_assert_str_eq(info.pk, "pk");
    ck_assert_str_eq(info.sk, "sk");
    ck_assert_int_eq(info.pk_type, DDB_N);
    ck_assert_int_eq(info.sk_type, DDB_B);
    ck_assert_int_eq(info.item_count, 0);

    /* Again: ResourceInUseException, or success with exist_ok (the TTL already set). */
    ck_assert_int_eq(ddb_client_create_table(client, "Admin", &key, NULL, NULL, &err), DDB_EINUSE);
    ck_assert_str_eq(err.aws_type, "ResourceInUseException");
    ck_assert_msg(ddb_client_create_table(client, "Admin", &key, &(ddb_create_table_options){
        .exist_ok = true, .ttl_attribute = "expires", .wait_active = true }, NULL, &err) == 0,
        "CreateTable again failed: %s", err.message);

    ck_assert_int_eq(ddb_client_wait_table_active(client, "Admin", 1000, NULL, &err), 0);
    ck_assert_int_eq(ddb_client_delete_table(client, "Admin", NULL, &err), 0);
    int rc = ddb_client_describe_table(client, "Admin", &info, NULL, &err);
    ck_assert(rc == DDB_ENOTFOUND || (rc == 0 && strcmp(info.status, "DELETING") == 0));
    ck_assert_int_eq(ddb_client_delete_table(client, "NeverWas", NULL, &err), DDB_ENOTFOUND);
}
END_TEST

START_TEST(string_keys_and_ttl)
{
    ddb_error err;
    ck_assert_int_eq(ddb_client_create_table(client, "Simple", &(ddb_key_schema){ .pk = "id" }, NULL, NULL, &err), 0);
    ck_assert_int_eq(ddb_client_wait_table_active(client, "Simple", 5000, NULL, &err), 0);
    ddb_table_info info;
    ck_assert_int_eq(ddb_client_describe_table(client, "Simple", &info, NULL, &err), 0);
    ck_assert_str_eq(info.sk, "");
    ck_assert_int_eq(info.pk_type, DDB_S);
    ck_assert_int_eq(ddb_client_update_ttl(client, "Simple", "ttl", true, NULL, &err), 0);
    ck_assert_int_eq(ddb_client_update_ttl(client, "Missing", "ttl", true, NULL, &err), DDB_ENOTFOUND);

    ddb_table *t = ddb_table_open(client, "Simple", "id", NULL, &err);
    ddb_item *it = ddb_item_new();
    ddb_item_set_s(it, "id", "1");
    ck_assert_int_eq(ddb_table_put_item(t, it, NULL, NULL, NULL, &err), 0);
    ck_assert_int_eq(ddb_client_describe_table(client, "Simple", &info, NULL, &err), 0);
    ddb_item_free(it);
    ddb_table_close(t);
}
END_TEST

START_TEST(wait_and_bad_arguments)
{
    ddb_error err;
    ck_assert_int_eq(ddb_client_wait_table_active(client, "Missing", 0, NULL, &err), DDB_ETIMEDOUT);
    ddb_cancel *stop = ddb_cancel_new();
    ddb_cancel_set(stop);
    ck_assert_int_eq(ddb_client_wait_table_active(client, "Missing", 60000, stop, &err), DDB_ECANCELED);
    ddb_cancel_unref(stop);
    ck_assert_int_eq(ddb_client_create_table(client, "Bad", &(ddb_key_schema){ .pk = NULL }, NULL, NULL, &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_client_create_table(client, "Bad", &(ddb_key_schema){ .pk = "k", .pk_type = DDB_BOOL },
                                      NULL, NULL, &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_client_create_table(client, "Bad", &(ddb_key_schema){ .pk = "k" },
        &(ddb_create_table_options){ .n_gsi = 1 }, NULL, &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_client_describe_table(client, "x", NULL, NULL, &err), DDB_EINVAL);
    ddb_table_info info;
    ck_assert_int_eq(ddb_client_describe_table(client, "Missing", &info, NULL, &err), DDB_ENOTFOUND);
    ck_assert_str_eq(err.aws_type, "ResourceNotFoundException");
}
END_TEST

static Suite *admin_suite(void)
{
    Suite *s = suite_create("client_admin");
    TCase *tc = tcase_create("admin");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, create_describe_delete);
    tcase_add_test(tc, string_keys_and_ttl);
    tcase_add_test(tc, wait_and_bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(admin_suite());
}
