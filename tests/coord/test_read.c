/* test_read.c: reading and listing locks through the public API -- the state of a lock
 * that has no item, is held, released, or held by a holder whose lease ran out; labels
 * of 256 multi-byte characters returned whole; a list over several pages returning each
 * lock once beside other entities, or only the lock items through a list index; the
 * fenced check by owner and token; and a table whose keys are numbers. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_fixture.h"

#define LEASE 30000

static ddb_lock_state state_of(proc *p, const char *name)
{
    ddb_lock_state st;
    ddb_error err;
    int rc = ddb_lock_table_get_state(p->locks, name, &st, NULL, &err);
    ck_assert_msg(rc == 0, "get_state %s: %s", name, err.message);
    return st;
}

/* n copies of the UTF-8 character ch, in a malloc'd string. */
static char *repeat(const char *ch, size_t n)
{
    size_t len = strlen(ch);
    char *s = malloc(len * n + 1);
    ck_assert_ptr_nonnull(s);
    for (size_t i = 0; i < n; i++)
        memcpy(s + i * len, ch, len);
    s[len * n] = '\0';
    return s;
}

START_TEST(test_state_missing_held_released)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "pod-a"});
    proc *b = cx_proc(NULL);
    ddb_lock_state st = state_of(b, "report");
    ck_assert(!st.exists);
    ck_assert(!st.is_held);
    ck_assert_int_eq(st.fencing_token, 0);
    ck_assert_str_eq(st.holder_label, "");

    ddb_lease *lease = cx_take(a, "report", LEASE);
    st = state_of(b, "report");
    ck_assert(st.exists);
    ck_assert(st.is_held);
    ck_assert_str_eq(st.holder_label, "pod-a");
    ck_assert_int_eq(st.lease_ms, LEASE);
    ck_assert_int_eq(st.fencing_token, ddb_lease_fencing_token(lease));

    ddb_lease_release(lease);
    st = state_of(b, "report");
    ck_assert(st.exists);
    ck_assert(!st.is_held);
    ck_assert_str_eq(st.holder_label, "");
    ck_assert_int_eq(st.lease_ms, 0);
    ck_assert_int_eq(st.fencing_token, 1);

    /* A bad name and a NULL state are refused before any request. */
    ddb_error err;
    ck_assert_int_eq(ddb_lock_table_get_state(b->locks, "has space", &st, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_table_get_state(b->locks, "report", NULL, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_table_get_state(NULL, "report", &st, NULL, &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_table_watch_refusals(NULL, NULL, NULL, NULL), DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_table_watch_refusals(b->locks, NULL, NULL, NULL), DDB_EINVAL);
    ddb_lock_table_unwatch_refusals(NULL, 1);
    ddb_lock_table_unwatch_refusals(b->locks, 12345);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A holder that crashed stays in the item after its lease: the state says held, with its
 * token. Reading is not watching: a reader that then tries is seeing the holder for the
 * first time, and is refused until it has seen it unchanged for a whole lease. */
START_TEST(test_state_of_expired_holder_and_reading_is_not_watching)
{
    proc *b = cx_proc(NULL);
    int64_t token = cx_sim_holder(b, "job", 5000, "crashed");
    cx_advance(20000);
    ddb_lock_state st = state_of(b, "job");
    ck_assert(st.is_held);
    ck_assert_str_eq(st.holder_label, "crashed");
    ck_assert_int_eq(st.lease_ms, 5000);
    ck_assert_int_eq(st.fencing_token, token);
    cx_advance(20000);
    ddb_lease *lease = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &lease, NULL, &err), 0);
    ck_assert_ptr_null(lease);
    cx_advance(5001);
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &lease, NULL, &err), 0);
    ck_assert_ptr_nonnull(lease);
    ck_assert(ddb_lease_takeover(lease));
    ck_assert_int_eq(ddb_lease_fencing_token(lease), token + 1);
    ddb_lease_release(lease);
    cx_proc_free(b);
}
END_TEST

/* 256 euro signs (768 bytes) written by a lock table's option, and 256 four-byte
 * characters (1024 bytes) written by a forced holder, come back whole; 257 are refused. */
START_TEST(test_labels_of_256_multibyte_characters_whole)
{
    char *euros = repeat("\xE2\x82\xAC", 256);
    proc *a = cx_proc(&(proc_options){.holder_label = euros});
    proc *b = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "wide", LEASE);
    ddb_lock_state st = state_of(b, "wide");
    ck_assert_uint_eq(strlen(st.holder_label), 768);
    ck_assert_str_eq(st.holder_label, euros);
    ddb_lease_release(lease);

    char *locks4 = repeat("\xF0\x9F\x94\x92", 256);
    ck_assert_int_eq(cx_sim_holder(b, "wider", LEASE, locks4), 1);
    st = state_of(b, "wider");
    ck_assert_uint_eq(strlen(st.holder_label), DDB_HOLDER_LABEL_MAX_BYTES);
    ck_assert_str_eq(st.holder_label, locks4);

    const char *name;
    ddb_error err;
    ddb_lock_list *list = ddb_lock_table_list(b->locks, NULL, NULL, &err);
    ck_assert_ptr_nonnull(list);
    int found = 0;
    while (ddb_lock_list_next(list, &name, &st, &err) == 1) {
        if (strcmp(name, "wider") == 0) {
            ck_assert_str_eq(st.holder_label, locks4);
            found++;
        }
    }
    ck_assert_int_eq(err.code, 0);
    ck_assert_int_eq(found, 1);
    ddb_lock_list_free(list);

    char *too_many = repeat("\xE2\x82\xAC", 257);
    ck_assert_int_eq(ddb_lock_force_hold(b->locks, "wider", LEASE, too_many, NULL, NULL, &err),
                     DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "257 characters"));
    free(too_many);
    free(locks4);
    cx_proc_free(a);
    cx_proc_free(b);
    free(euros);
}
END_TEST

/* 25 locks (held, released, one deleted) among 10 other entities, listed 3 items a
 * page: each lock once, with its state, the other entities and the deleted lock never. */
START_TEST(test_list_pages_each_lock_once)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "lister"});
    ddb_error err;
    for (int i = 0; i < 10; i++) {
        ddb_item *order = ddb_item_new();
        char pk[32];
        snprintf(pk, sizeof pk, "ORDER#%d", i);
        ddb_item_set_s(order, "pk", pk);
        ddb_item_set_s(order, "sk", "ORDER");
        ck_assert_int_eq(ddb_table_put_item(a->table, order, NULL, NULL, NULL, &err), 0);
        ddb_item_free(order);
    }
    enum { N = 26 };
    ddb_lease *leases[N] = {0};
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "lock-%02d", i);
        leases[i] = cx_take(a, name, LEASE);
        if (i % 2 == 1) {
            ddb_lease_release(leases[i]);
            leases[i] = NULL;
        }
    }
    cx_sim_delete(a, "lock-25");
    long scans_before = cx_fakedb() ? cx_requests("Scan") : 0;

    ddb_lock_list *list =
        ddb_lock_table_list(a->locks, &(ddb_lock_list_options){.page_limit = 3}, NULL, &err);
    ck_assert_ptr_nonnull(list);
    int seen[N] = {0};
    int total = 0;
    const char *name;
    ddb_lock_state st;
    int rc;
    while ((rc = ddb_lock_list_next(list, &name, &st, &err)) == 1) {
        int i = -1;
        ck_assert_int_eq(sscanf(name, "lock-%d", &i), 1);
        ck_assert(i >= 0 && i < N);
        seen[i]++;
        total++;
        ck_assert(st.exists);
        ck_assert_int_eq(st.fencing_token, 1);
        ck_assert_int_eq(st.is_held, i % 2 == 0);
        ck_assert_str_eq(st.holder_label, i % 2 == 0 ? "lister" : "");
        ck_assert_int_eq(st.lease_ms, i % 2 == 0 ? LEASE : 0);
    }
    ck_assert_msg(rc == 0, "list: %s", err.message);
    ck_assert_int_eq(total, N - 1);
    for (int i = 0; i < N - 1; i++)
        ck_assert_msg(seen[i] == 1, "lock-%02d listed %d times", i, seen[i]);
    ck_assert_int_eq(seen[N - 1], 0);
    /* After the end, the end again. */
    ck_assert_int_eq(ddb_lock_list_next(list, &name, &st, &err), 0);
    ck_assert_ptr_null(name);
    ddb_lock_list_free(list);
    if (cx_fakedb()) /* 35 items, 3 a page: at least 12 Scans */
        ck_assert_int_ge(cx_requests("Scan") - scans_before, 12);

    ck_assert_ptr_null(
        ddb_lock_table_list(a->locks, &(ddb_lock_list_options){.page_limit = -1}, NULL, &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ddb_lock_list_free(NULL);
    for (int i = 0; i < N; i++)
        ddb_lease_release(leases[i]);
    cx_proc_free(a);
}
END_TEST

/* With a list index, a list queries it: the lock items only, each once, over pages,
 * without a Scan; entities with another _type are in other partitions of the index. */
START_TEST(test_list_by_index_reads_lock_items_only)
{
    char indexed[80];
    snprintf(indexed, sizeof indexed, "%s_indexed", CX.shop);
    proc *admin = cx_proc(NULL);
    ddb_error err;
    ddb_index_def gsi = {.name = "locks",
                         .key = {.pk = DDB_LOCK_INDEX_KEY, .pk_type = DDB_S},
                         .projection = DDB_PROJECT_ALL};
    int rc = ddb_client_create_table(admin->client, indexed,
                              &(ddb_key_schema){.pk = "pk", .sk = "sk"},
                              &(ddb_create_table_options){.gsi = &gsi, .n_gsi = 1,
                                                          .wait_active = true}, NULL,
                              &err);
    ck_assert_msg(rc == 0, "create: %s", err.message);
    proc *p = cx_proc(&(proc_options){.table = indexed});
    ddb_lock_table *by_index = ddb_lock_table_new(
        p->table, &(ddb_lock_table_options){.list_index = "locks"}, &err);
    ck_assert_ptr_nonnull(by_index);
    for (int i = 0; i < 7; i++) {
        ddb_item *order = ddb_item_new();
        char pk[32];
        snprintf(pk, sizeof pk, "ORDER#%d", i);
        ddb_item_set_s(order, "pk", pk);
        ddb_item_set_s(order, "sk", "ORDER");
        ddb_item_set_s(order, DDB_LOCK_INDEX_KEY, "ORDER");
        ck_assert_int_eq(ddb_table_put_item(p->table, order, NULL, NULL, NULL, &err), 0);
        ddb_item_free(order);
    }
    enum { N = 5 };
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "idx-%d", i);
        cx_sim_holder(p, name, LEASE, i == 3 ? "three" : NULL);
    }
    long scans = cx_fakedb() ? cx_requests("Scan") : 0;
    long queries = cx_fakedb() ? cx_requests("Query") : 0;
    ddb_lock_list *list =
        ddb_lock_table_list(by_index, &(ddb_lock_list_options){.page_limit = 2}, NULL, &err);
    ck_assert_ptr_nonnull(list);
    int seen[N] = {0}, total = 0;
    const char *name;
    ddb_lock_state st;
    while ((rc = ddb_lock_list_next(list, &name, &st, &err)) == 1) {
        int i = -1;
        ck_assert_int_eq(sscanf(name, "idx-%d", &i), 1);
        ck_assert(i >= 0 && i < N);
        seen[i]++;
        total++;
        ck_assert(st.is_held);
        ck_assert_int_eq(st.fencing_token, 1);
        ck_assert_str_eq(st.holder_label, i == 3 ? "three" : "");
    }
    ck_assert_msg(rc == 0, "list: %s", err.message);
    ck_assert_int_eq(total, N);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(seen[i], 1);
    ddb_lock_list_free(list);
    if (cx_fakedb()) {
        ck_assert_int_eq(cx_requests("Scan"), scans);
        ck_assert_int_ge(cx_requests("Query") - queries, 3); /* 5 items, 2 a page */
    }
    /* An index that is not there is the server's error, not an empty list. */
    ddb_lock_table *missing = ddb_lock_table_new(
        p->table, &(ddb_lock_table_options){.list_index = "nope"}, &err);
    list = ddb_lock_table_list(missing, NULL, NULL, &err);
    ck_assert_ptr_nonnull(list);
    ck_assert_int_lt(ddb_lock_list_next(list, &name, &st, &err), 0);
    ddb_lock_list_free(list);
    ddb_lock_table_free(missing);
    ck_assert_ptr_null(
        ddb_lock_table_new(p->table, &(ddb_lock_table_options){.list_index = "x"}, &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);

    ddb_lock_table_free(by_index);
    cx_proc_free(p);
    ddb_client_delete_table(admin->client, indexed, NULL, NULL);
    cx_proc_free(admin);
}
END_TEST

/* An empty table lists nothing; a list stopped by its cancel token says so. */
START_TEST(test_list_empty_and_cancelled)
{
    proc *a = cx_proc(&(proc_options){.table = CX.flat});
    ddb_error err;
    ddb_lock_list *list = ddb_lock_table_list(a->locks, NULL, NULL, &err);
    const char *name;
    ddb_lock_state st;
    ck_assert_int_eq(ddb_lock_list_next(list, &name, &st, &err), 0);
    ddb_lock_list_free(list);

    ddb_cancel *stop = ddb_cancel_new();
    ddb_cancel_set(stop);
    list = ddb_lock_table_list(a->locks, NULL, stop, &err);
    ck_assert_ptr_nonnull(list);
    ck_assert_int_eq(ddb_lock_list_next(list, &name, &st, &err), DDB_ECANCELED);
    ddb_lock_list_free(list);
    ddb_cancel_unref(stop);
    cx_proc_free(a);
}
END_TEST

/* A forced release keeps the token and makes no item where there was none. */
START_TEST(test_force_release_keeps_token_makes_no_item)
{
    proc *a = cx_proc(NULL);
    ddb_error err;
    ck_assert_int_eq(ddb_lock_force_release(a->locks, "ghost", NULL, &err), 0);
    ck_assert(!state_of(a, "ghost").exists);
    ck_assert_int_eq(cx_sim_holder(a, "ghost", LEASE, NULL), 1);
    ck_assert_int_eq(cx_sim_holder(a, "ghost", LEASE, "again"), 2);
    ck_assert_int_eq(ddb_lock_force_release(a->locks, "ghost", NULL, &err), 0);
    ddb_lock_state st = state_of(a, "ghost");
    ck_assert(st.exists && !st.is_held);
    ck_assert_int_eq(st.fencing_token, 2);
    ck_assert_int_eq(ddb_lock_force_hold(a->locks, "ghost", 10, NULL, NULL, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_force_delete(a->locks, "ghost", NULL, &err), 0);
    ck_assert(!state_of(a, "ghost").exists);
    cx_proc_free(a);
}
END_TEST

/* A release by hand, conditional on the holder an operator was shown: refused for
 * another token or owner, done for the shown one as a lease's release (the next
 * acquire's token is one higher); after a takeover the new holder stays intact. */
START_TEST(test_release_if_shown_holder_only)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "stuck"});
    proc *op = cx_proc(NULL);
    ddb_error err;
    bool released = true;

    /* No item: nothing to release, and no item is made. */
    ck_assert_int_eq(ddb_lock_release_if(op->locks, "jobs", NULL, 1, &released, NULL, &err), 0);
    ck_assert(!released);
    ck_assert(!state_of(op, "jobs").exists);

    ddb_lease *lease = cx_take(a, "jobs", LEASE);
    int64_t token = ddb_lease_fencing_token(lease);
    char owner[DDB__LOCK_ID_LEN + 1];
    snprintf(owner, sizeof owner, "%s", ddb_lease_owner(lease));

    /* Another token, or the right token with another owner: refused, holder intact. */
    released = true;
    ck_assert_int_eq(ddb_lock_release_if(op->locks, "jobs", NULL, token + 1, &released, NULL,
                                         &err), 0);
    ck_assert(!released);
    released = true;
    ck_assert_int_eq(ddb_lock_release_if(op->locks, "jobs", "someone-else", token, &released,
                                         NULL, &err), 0);
    ck_assert(!released);
    ddb_lock_state st = state_of(op, "jobs");
    ck_assert(st.is_held);
    ck_assert_str_eq(st.holder_label, "stuck");
    ck_assert_int_eq(st.fencing_token, token);

    /* The shown owner and token: released as a lease's release, the token kept. */
    ck_assert_int_eq(ddb_lock_release_if(op->locks, "jobs", owner, token, &released, NULL, &err),
                     0);
    ck_assert(released);
    st = state_of(op, "jobs");
    ck_assert(st.exists && !st.is_held);
    ck_assert_str_eq(st.holder_label, "");
    ck_assert_int_eq(st.lease_ms, 0);
    ck_assert_int_eq(st.fencing_token, token);
    /* Again: already free, nothing to do. */
    ck_assert_int_eq(ddb_lock_release_if(op->locks, "jobs", NULL, token, &released, NULL, &err),
                     0);
    ck_assert(!released);
    ddb_lease_release(lease);

    /* The next acquire raises the token by one. */
    ddb_lease *next = cx_take(op, "jobs", LEASE);
    ck_assert_int_eq(ddb_lease_fencing_token(next), token + 1);
    ddb_lease_release(next);

    /* Shown holder, then a takeover: the release by the old token is refused and the
     * new holder stays. */
    int64_t shown = cx_sim_holder(a, "jobs", LEASE, "old");
    int64_t newer = cx_sim_holder(a, "jobs", LEASE, "new");
    ck_assert_int_eq(newer, shown + 1);
    released = true;
    ck_assert_int_eq(ddb_lock_release_if(op->locks, "jobs", NULL, shown, &released, NULL, &err),
                     0);
    ck_assert(!released);
    st = state_of(op, "jobs");
    ck_assert(st.is_held);
    ck_assert_str_eq(st.holder_label, "new");
    ck_assert_int_eq(st.fencing_token, newer);
    ck_assert_int_eq(st.lease_ms, LEASE);

    /* Bad arguments, before any request. */
    ck_assert_int_eq(ddb_lock_release_if(op->locks, "jobs", NULL, 0, &released, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_release_if(op->locks, "jobs", NULL, newer, NULL, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_release_if(op->locks, "jobs", "", newer, &released, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_release_if(op->locks, "bad name", NULL, newer, &released, NULL,
                                         &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_release_if(NULL, "jobs", NULL, newer, &released, NULL, &err),
                     DDB_EINVAL);
    ck_assert(state_of(op, "jobs").is_held);
    cx_proc_free(a);
    cx_proc_free(op);
}
END_TEST

/* The fenced check by owner and token: commits while the lease holds, refused once
 * another holder took the lock. */
START_TEST(test_tx_check_lock)
{
    proc *a = cx_proc(NULL);
    proc *b = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "writer", LEASE);
    char owner[DDB__LOCK_ID_LEN + 1];
    snprintf(owner, sizeof owner, "%s", ddb_lease_owner(lease));
    int64_t token = ddb_lease_fencing_token(lease);
    ddb_error err;
    for (int round = 0; round < 2; round++) {
        ddb_tx *tx = ddb_tx_new(b->client);
        ddb_tx_marker held;
        ck_assert_int_eq(ddb_tx_check_lock(tx, b->locks, "writer", owner, token, &held, &err), 0);
        ddb_item *order = ddb_item_new();
        ddb_item_set_s(order, "pk", "ORDER#1");
        ddb_item_set_s(order, "sk", round ? "late" : "on-time");
        ck_assert_int_eq(ddb_tx_put(tx, b->table, order, NULL, NULL, NULL), 0);
        int rc = ddb_tx_send(tx, NULL, &err);
        if (round == 0) {
            ck_assert_msg(rc == 0, "send: %s", err.message);
            cx_sim_holder(b, "writer", LEASE, "usurper");
        } else {
            ck_assert_int_eq(rc, DDB_ETXCANCELED);
            ck_assert_int_eq(ddb_tx_reason_for(tx, held), DDB_TXFAIL_CONDITIONAL_CHECK_FAILED);
        }
        ddb_item_free(order);
        ddb_tx_free(tx);
    }
    /* A bad name poisons the transaction: its send fails with the name's error. */
    ddb_tx *tx = ddb_tx_new(b->client);
    ck_assert_int_eq(ddb_tx_check_lock(tx, b->locks, "", owner, token, NULL, &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_tx_send(tx, NULL, &err), DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "lock name"));
    ddb_tx_free(tx);
    ddb_lease_release(lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A table whose partition key is a number: every call on a lock says which lock, which
 * table, and that the key attributes of a lock table must be strings. */
START_TEST(test_numeric_key_table_clear_error)
{
    char numbers[80];
    snprintf(numbers, sizeof numbers, "%s_numbers", CX.shop);
    proc *admin = cx_proc(NULL);
    ddb_error err;
    ddb_key_schema ks = {.pk = "pk", .pk_type = DDB_N, .sk = "sk", .sk_type = DDB_S};
    int rc = ddb_client_create_table(admin->client, numbers, &ks,
                              &(ddb_create_table_options){.wait_active = true}, NULL, &err);
    ck_assert_msg(rc == 0, "create: %s", err.message);
    proc *p = cx_proc(&(proc_options){.table = numbers});

    ddb_lock_state st;
    rc = ddb_lock_table_get_state(p->locks, "billing", &st, NULL, &err);
    ck_assert_int_eq(rc, DDB_EVALIDATION);
    ck_assert_msg(strstr(err.message, "\"billing\"") && strstr(err.message, numbers) &&
                      strstr(err.message, "must be strings"),
                  "message: %s", err.message);
    ddb_lease *lease = NULL;
    rc = ddb_lock_try_acquire(p->locks, "billing", LEASE, &lease, NULL, &err);
    ck_assert_int_eq(rc, DDB_EVALIDATION);
    ck_assert_ptr_null(lease);
    ck_assert_msg(strstr(err.message, "\"billing\"") && strstr(err.message, "must be strings"),
                  "message: %s", err.message);
    rc = ddb_lock_force_hold(p->locks, "billing", LEASE, NULL, NULL, NULL, &err);
    ck_assert_int_eq(rc, DDB_EVALIDATION);
    ck_assert_ptr_nonnull(strstr(err.message, "must be strings"));

    cx_proc_free(p);
    ddb_client_delete_table(admin->client, numbers, NULL, NULL);
    cx_proc_free(admin);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("read");
    TCase *tc = tcase_create("read");
    tcase_add_checked_fixture(tc, cx_setup, cx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_state_missing_held_released);
    tcase_add_test(tc, test_state_of_expired_holder_and_reading_is_not_watching);
    tcase_add_test(tc, test_labels_of_256_multibyte_characters_whole);
    tcase_add_test(tc, test_list_pages_each_lock_once);
    tcase_add_test(tc, test_list_by_index_reads_lock_items_only);
    tcase_add_test(tc, test_list_empty_and_cancelled);
    tcase_add_test(tc, test_force_release_keeps_token_makes_no_item);
    tcase_add_test(tc, test_release_if_shown_holder_only);
    tcase_add_test(tc, test_tx_check_lock);
    tcase_add_test(tc, test_numeric_key_table_clear_error);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
