/* test_locktable.c: the lock table and the lock item -- options and their bounds, the
 * key of a lock with and without a sort key, the item's attributes and what each write
 * does to them, the holder label and the time-to-live attribute. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_fixture.h"

#define LEASE 30000

static ddb_item *raw(proc *p, const char *name)
{
    ddb_error err;
    ddb_item *key = ddb__lock_key(p->locks, name, &err);
    ddb_result res = {0};
    ck_assert_int_eq(ddb_table_get_item(p->table, key, &(ddb_get_options){.consistent_read = true},
                                  &res, NULL, &err),
                     0);
    ddb_item_free(key);
    ddb_item *it = res.item;
    res.item = NULL;
    ddb_result_cleanup(&res);
    return it;
}

static ddb_lease *take(proc *p, const char *name)
{
    ddb_lease *lease = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_try_acquire(p->locks, name, LEASE, &lease, NULL, &err), 0);
    ck_assert_ptr_nonnull(lease);
    return lease;
}

/* The item of lock nightly-report: pk LOCK#nightly-report, sk LOCK, and the fixed
 * attributes, beside the entities of a single-table design. */
START_TEST(test_item_key_and_attributes)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "pod-1"});
    ddb_error err;
    ddb_item *order = ddb_item_new();
    ddb_item_set_s(order, "pk", "ORDER#1");
    ddb_item_set_s(order, "sk", "ORDER");
    ck_assert_int_eq(ddb_table_put_item(a->table, order, NULL, NULL, NULL, &err), 0);
    ddb_item_free(order);
    ddb_lease *lease = take(a, "nightly-report");
    ddb_item *it = raw(a, "nightly-report");
    ck_assert_ptr_nonnull(it);
    ck_assert_str_eq(ddb_item_get_s(it, "pk"), DDB__LOCK_PK_PREFIX "nightly-report");
    ck_assert_str_eq(ddb_item_get_s(it, "sk"), DDB__LOCK_SK_VALUE);
    ck_assert_str_eq(ddb_item_get_s(it, DDB__LOCK_ATTR_TYPE), DDB__LOCK_TYPE_VALUE);
    ck_assert_str_eq(ddb_item_get_s(it, DDB__LOCK_ATTR_OWNER), ddb_lease_owner(lease));
    ck_assert_ptr_nonnull(ddb_item_get_s(it, DDB__LOCK_ATTR_RVN));
    int64_t v;
    ck_assert_int_eq(ddb_item_get_i64(it, DDB__LOCK_ATTR_FENCE, &v), 0);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(ddb_item_get_i64(it, DDB__LOCK_ATTR_LEASE_MS, &v), 0);
    ck_assert_int_eq(v, LEASE);
    ck_assert_str_eq(ddb_item_get_s(it, DDB__LOCK_ATTR_HOLDER), "pod-1");
    ck_assert_uint_eq(ddb_item_count(it), 8);
    ddb_item_free(it);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* A table without a sort key: the key is the partition key alone. */
START_TEST(test_item_key_without_sort_key)
{
    proc *a = cx_proc(&(proc_options){.table = CX.flat});
    ddb_lease *lease = take(a, "job");
    ddb_item *it = raw(a, "job");
    ck_assert_str_eq(ddb_item_get_s(it, "pk"), DDB__LOCK_PK_PREFIX "job");
    ck_assert_ptr_null(ddb_item_get(it, "sk"));
    ddb_item_free(it);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* Every acquire has a new owner and raises the token by one; a release removes owner,
 * leaseMs and holder and keeps the item and its token, so the token never goes back. */
START_TEST(test_owner_new_per_acquire_fence_by_one)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "pod-1"});
    char owners[4][DDB__LOCK_ID_LEN + 1];
    for (int i = 0; i < 4; i++) {
        ddb_lease *lease = take(a, "job");
        ck_assert_int_eq(ddb_lease_fencing_token(lease), i + 1);
        snprintf(owners[i], sizeof owners[i], "%s", ddb_lease_owner(lease));
        for (int k = 0; k < i; k++)
            ck_assert_str_ne(owners[k], owners[i]);
        ddb_lease_release(lease);
        ddb_item *it = raw(a, "job");
        ck_assert_ptr_nonnull(it);
        ck_assert_ptr_null(ddb_item_get(it, DDB__LOCK_ATTR_OWNER));
        ck_assert_ptr_null(ddb_item_get(it, DDB__LOCK_ATTR_LEASE_MS));
        ck_assert_ptr_null(ddb_item_get(it, DDB__LOCK_ATTR_HOLDER));
        int64_t f;
        ck_assert_int_eq(ddb_item_get_i64(it, DDB__LOCK_ATTR_FENCE, &f), 0);
        ck_assert_int_eq(f, i + 1);
        ddb_item_free(it);
    }
    cx_proc_free(a);
}
END_TEST

/* The holder label: written as holder; an acquire without a label removes the one of the
 * holder before; it is no part of a condition, so processes with and without labels
 * contend as equals. */
START_TEST(test_holder_label_written_and_removed)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "pod-a"}), *b = cx_proc(NULL);
    ddb_lease *lease = take(a, "job");
    ddb_lease *none = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &none, NULL, NULL), 0);
    ck_assert_ptr_null(none); /* the unlabelled one is refused like any other */
    ddb_lease_release(lease);
    lease = take(b, "job");
    ddb_item *it = raw(a, "job");
    ck_assert_ptr_null(ddb_item_get(it, DDB__LOCK_ATTR_HOLDER));
    ddb_item_free(it);
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &none, NULL, NULL), 0);
    ck_assert_ptr_null(none); /* and the labelled one too */
    ddb_lease_release(lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* Holder labels have 1 to 256 characters (not bytes) of printable text. */
START_TEST(test_holder_label_bounds)
{
    proc *a = cx_proc(NULL);
    ddb_error err;
    char label[600];
    memset(label, 'x', 256);
    label[256] = '\0';
    ddb_lock_table *l = ddb_lock_table_new(a->table, &(ddb_lock_table_options){.holder_label = label},
                                           &err);
    ck_assert_ptr_nonnull(l);
    ddb_lock_table_free(l);
    label[256] = 'x';
    label[257] = '\0';
    ck_assert_ptr_null(ddb_lock_table_new(a->table,
                                          &(ddb_lock_table_options){.holder_label = label},
                                          &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "257"));
    ck_assert_ptr_null(ddb_lock_table_new(a->table, &(ddb_lock_table_options){.holder_label = ""},
                                          &err));
    ck_assert_ptr_null(ddb_lock_table_new(
        a->table, &(ddb_lock_table_options){.holder_label = "pod\n1"}, &err));
    /* 256 two-byte characters are 256 characters. */
    label[0] = '\0';
    for (int i = 0; i < 256; i++)
        strcat(label, "\xc3\xa9");
    l = ddb_lock_table_new(a->table, &(ddb_lock_table_options){.holder_label = label}, &err);
    ck_assert_ptr_nonnull(l);
    ddb_lock_table_free(l);
    ck_assert_ptr_null(ddb_lock_table_new(NULL, NULL, &err));
    ddb_lock_table_free(NULL);
    cx_proc_free(a);
}
END_TEST

/* The time-to-live attribute: every write (acquire, renewal, release) sets it to the
 * wall clock plus the retention, in seconds since the epoch; 30 days by default. */
START_TEST(test_ttl_on_every_write)
{
    proc *a = cx_proc(&(proc_options){.ttl_attribute = "expiresAt"});
    int64_t day_s = 86400;
    int64_t now_s = ddb_clock_wall_ms(CX.fx.clock) / 1000;
    ddb_lease *lease = take(a, "job");
    ddb_item *it = raw(a, "job");
    int64_t ttl;
    ck_assert_int_eq(ddb_item_get_i64(it, "expiresAt", &ttl), 0);
    ck_assert_int_eq(ttl, now_s + 30 * day_s);
    ddb_item_free(it);
    cx_advance(LEASE / 3);
    it = raw(a, "job");
    ck_assert_int_eq(ddb_item_get_i64(it, "expiresAt", &ttl), 0);
    ck_assert_int_eq(ttl, now_s + LEASE / 3 / 1000 + 30 * day_s);
    ddb_item_free(it);
    cx_advance(5000);
    ddb_lease_release(lease);
    it = raw(a, "job");
    ck_assert_int_eq(ddb_item_get_i64(it, "expiresAt", &ttl), 0);
    ck_assert_int_eq(ttl, now_s + LEASE / 3 / 1000 + 5 + 30 * day_s);
    ddb_item_free(it);
    cx_proc_free(a);

    proc *b = cx_proc(&(proc_options){.ttl_attribute = "expiresAt",
                                      .ttl_retention_ms = DDB_LOCK_TTL_RETENTION_MIN_MS});
    lease = take(b, "job2");
    it = raw(b, "job2");
    ck_assert_int_eq(ddb_item_get_i64(it, "expiresAt", &ttl), 0);
    ck_assert_int_eq(ttl, ddb_clock_wall_ms(CX.fx.clock) / 1000 + day_s);
    ddb_item_free(it);
    ddb_lease_release(lease);
    cx_proc_free(b);
}
END_TEST

/* Without the option no time-to-live attribute is written, and the option only writes
 * the attribute: it never turns time to live on for the table. */
START_TEST(test_ttl_option_only_writes_attribute)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(&(proc_options){.ttl_attribute = "expiresAt"});
    ddb_lease *lease = take(a, "job");
    ddb_lease_release(lease);
    ck_assert_int_eq(cx_requests("UpdateTimeToLive"), 0);
    proc *b = cx_proc(NULL);
    lease = take(b, "job2");
    ddb_item *it = raw(b, "job2");
    ck_assert_uint_eq(ddb_item_count(it), 7);
    ddb_item_free(it);
    ddb_lease_release(lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* The retention is at least a day; the attribute is not a key nor a lock attribute. */
START_TEST(test_ttl_option_validation)
{
    proc *a = cx_proc(NULL);
    ddb_error err;
    ck_assert_ptr_null(ddb_lock_table_new(
        a->table,
        &(ddb_lock_table_options){.ttl_attribute = "expiresAt",
                                  .ttl_retention_ms = DDB_LOCK_TTL_RETENTION_MIN_MS - 1},
        &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "1 day"));
    const char *bad[] = {"pk", "sk", DDB__LOCK_ATTR_TYPE, DDB__LOCK_ATTR_OWNER,
                         DDB__LOCK_ATTR_RVN, DDB__LOCK_ATTR_FENCE, DDB__LOCK_ATTR_LEASE_MS,
                         DDB__LOCK_ATTR_HOLDER, ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(ddb_lock_table_new(
            a->table, &(ddb_lock_table_options){.ttl_attribute = bad[i]}, &err));
        ck_assert_int_eq(err.code, DDB_EINVAL);
    }
    ddb_lock_table *l = ddb_lock_table_new(
        a->table, &(ddb_lock_table_options){.ttl_attribute = "ttl"}, &err);
    ck_assert_ptr_nonnull(l);
    ck_assert_str_eq(ddb__lock_table_ttl_attribute(l), "ttl");
    ck_assert_ptr_eq(ddb_lock_table_table(l), a->table);
    ddb_lock_table_free(l);
    cx_proc_free(a);
}
END_TEST

/* The accessors of a lease. */
START_TEST(test_lease_accessors)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = take(a, "job");
    ck_assert_str_eq(ddb_lease_name(lease), "job");
    ck_assert_uint_eq(strlen(ddb_lease_owner(lease)), DDB__LOCK_ID_LEN);
    ck_assert_int_eq(ddb_lease_duration_ms(lease), LEASE);
    ck_assert_ptr_eq(ddb_lease_lock_table(lease), a->locks);
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_NONE);
    ck_assert_str_eq(ddb_loss_reason_name(DDB_LOSS_NONE), "none");
    ck_assert_str_eq(ddb_loss_reason_name(DDB_LOSS_TABLE_NOT_FOUND), "table_not_found");
    ck_assert_ptr_null(ddb_lease_ended(NULL));
    ck_assert_int_eq(ddb_lease_fencing_token(NULL), 0);
    ddb_lease_release(NULL);
    bool held;
    ck_assert_int_eq(ddb_lease_renew(NULL, &held, NULL, NULL), DDB_EINVAL);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

typedef struct refusal_seen {
    int n;
    char name[64];
} refusal_seen;

static void count_refusal(void *arg, const char *name)
{
    refusal_seen *r = arg;
    r->n++;
    snprintf(r->name, sizeof r->name, "%s", name);
}

/* The public refusal watch: a try turned away calls it with the lock's name, a try that
 * gets the lock does not, an ended watch is not called again, and bad arguments fail. */
START_TEST(test_watch_refusals)
{
    proc *a = cx_proc(NULL);
    proc *b = cx_proc(NULL);
    ddb_lease *lease = take(a, "job");
    refusal_seen seen = {0};
    ddb_error err;
    long id = ddb_lock_table_watch_refusals(b->locks, count_refusal, &seen, &err);
    ck_assert_int_gt(id, 0);
    ddb_lease *got = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &got, NULL, &err), 0);
    ck_assert_ptr_null(got);
    ck_assert_int_eq(seen.n, 1);
    ck_assert_str_eq(seen.name, "job");
    /* A try that gets its lock is no refusal. */
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "other", LEASE, &got, NULL, &err), 0);
    ck_assert_ptr_nonnull(got);
    ck_assert_int_eq(seen.n, 1);
    ddb_lease_release(got);
    /* Another lock table's refusals are not this watch's. */
    ddb_lease *c_got = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &c_got, NULL, &err), 0);
    ck_assert_int_eq(seen.n, 1);
    ddb_lease_release(c_got);
    ddb_lock_table_unwatch_refusals(b->locks, id);
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &got, NULL, &err), 0);
    ck_assert_ptr_null(got);
    ck_assert_int_eq(seen.n, 1);
    ddb_lock_table_unwatch_refusals(b->locks, id); /* unknown now: nothing */
    ddb_lock_table_unwatch_refusals(NULL, id);
    ck_assert_int_eq(ddb_lock_table_watch_refusals(b->locks, NULL, &seen, &err), DDB_EINVAL);
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_table_watch_refusals(NULL, count_refusal, &seen, NULL),
                     DDB_EINVAL);
    ddb_lease_release(lease);
    cx_proc_free(b);
    cx_proc_free(a);
}
END_TEST

/* ddb_lock_name_check against coord.h's rule: 1 to 255 bytes of printable UTF-8 without
 * spaces; each refusal is DDB_EINVAL with a message. */
static void expect_name_refused(const char *name, const char *why)
{
    ddb_error err = {0};
    ck_assert_msg(ddb_lock_name_check(name, &err) == DDB_EINVAL, "accepted: %s", why);
    ck_assert_msg(err.code == DDB_EINVAL && err.message[0] != '\0', "no message: %s", why);
}

START_TEST(test_lock_name_check)
{
    ddb_error err = {0};
    char name[300];
    ck_assert_int_eq(ddb_lock_name_check("orders/2026-12-01#1", &err), 0);
    ck_assert_int_eq(ddb_lock_name_check("Z\xc3\xbcrich-\xe2\x82\xac-\xf0\x9f\x94\x92", &err), 0);
    memset(name, 'a', 255);
    name[255] = '\0';
    ck_assert_int_eq(ddb_lock_name_check(name, &err), 0);
    name[255] = 'a';
    name[256] = '\0';
    expect_name_refused(name, "256 bytes");
    expect_name_refused(NULL, "NULL");
    expect_name_refused("", "empty");
    expect_name_refused("two words", "a space");
    expect_name_refused("tab\there", "a tab");
    expect_name_refused("line\n", "a new line");
    expect_name_refused("esc\x1b[2J", "ESC");
    expect_name_refused("del\x7f", "DEL");
    expect_name_refused("bad\xff", "a byte that is never UTF-8");
    expect_name_refused("over\xc0\xaf", "an overlong encoding");
    expect_name_refused("cut\xe2\x82", "a sequence cut short");
    expect_name_refused("surrogate\xed\xa0\x80", "a surrogate");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("locktable");
    TCase *tc = tcase_create("locktable");
    tcase_add_checked_fixture(tc, cx_setup, cx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_item_key_and_attributes);
    tcase_add_test(tc, test_item_key_without_sort_key);
    tcase_add_test(tc, test_owner_new_per_acquire_fence_by_one);
    tcase_add_test(tc, test_holder_label_written_and_removed);
    tcase_add_test(tc, test_holder_label_bounds);
    tcase_add_test(tc, test_ttl_on_every_write);
    tcase_add_test(tc, test_ttl_option_only_writes_attribute);
    tcase_add_test(tc, test_ttl_option_validation);
    tcase_add_test(tc, test_lease_accessors);
    tcase_add_test(tc, test_watch_refusals);
    suite_add_tcase(s, tc);
    TCase *names = tcase_create("names");
    tcase_add_test(names, test_lock_name_check);
    suite_add_tcase(s, names);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
