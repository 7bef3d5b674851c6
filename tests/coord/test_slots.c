/* test_slots.c: slots, at most N holders of a name (ddb_lock_acquire_slot): N acquire at
 * once and the next is refused or waits, a release or a crashed holder frees a slot,
 * tokens go up per slot, and a wait that is cancelled or an acquire in doubt holds
 * nothing. Over real HTTP against the in-process fake (or DynamoDB Local), fake clock. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_fixture.h"

#define LEASE 30000

/* One slot's acquire without waiting; the test fails on an error. */
static ddb_lease *try_slot(proc *p, const char *name, int slots, int *slot)
{
    ddb_lease *lease = NULL;
    ddb_error err;
    int rc = ddb_lock_acquire_slot(p->locks, name, slots, LEASE,
                                   &(ddb_lock_slot_options){.no_wait = true}, &lease, slot, NULL,
                                   &err);
    ck_assert_msg(rc == 0, "acquire_slot: %s", err.message);
    return lease;
}

static void slot_name(const char *name, int slot, char *buf)
{
    ddb_error err;
    ck_assert_msg(ddb_lock_slot_name(name, slot, buf, DDB_LOCK_NAME_SIZE, &err) == 0, "%s",
                  err.message);
}

/* A slot's acquire that waits, on a thread of its own. */
typedef struct slot_bg {
    pthread_t th;
    proc *p;
    const char *name;
    int slots;
    ddb_cancel *stop;
    ddb_lease *lease;
    int slot;
    int rc;
    ddb_error err;
    atomic_bool done;
} slot_bg;

static void *slot_bg_main(void *arg)
{
    slot_bg *b = arg;
    b->rc = ddb_lock_acquire_slot(b->p->locks, b->name, b->slots, LEASE, NULL, &b->lease,
                                  &b->slot, b->stop, &b->err);
    atomic_store(&b->done, true);
    return NULL;
}

static void slot_bg_start(slot_bg *b, proc *p, const char *name, int slots)
{
    memset(b, 0, sizeof *b);
    b->p = p;
    b->name = name;
    b->slots = slots;
    b->slot = -2;
    b->stop = ddb_cancel_new();
    ck_assert_ptr_nonnull(b->stop);
    atomic_init(&b->done, false);
    ck_assert_int_eq(pthread_create(&b->th, NULL, slot_bg_main, b), 0);
}

static int slot_bg_join(slot_bg *b)
{
    /* The check's own timeout guards against a hang; the test decides when it ends. */
    pthread_join(b->th, NULL);
    ddb_cancel_unref(b->stop);
    b->stop = NULL;
    return b->rc;
}

/* N acquire at once, each a slot of its own with token 1; the N+1th is refused, and
 * every slot was tried once for it. */
START_TEST(test_n_holders_then_refused)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *held[3];
    bool seen[3] = {false, false, false};
    for (int i = 0; i < 3; i++) {
        int k = -1;
        held[i] = try_slot(a, "workers", 3, &k);
        ck_assert_ptr_nonnull(held[i]);
        ck_assert(k >= 0 && k < 3 && !seen[k]);
        seen[k] = true;
        char name[DDB_LOCK_NAME_SIZE];
        slot_name("workers", k, name);
        ck_assert_str_eq(ddb_lease_name(held[i]), name);
        ck_assert_int_eq(ddb_lease_fencing_token(held[i]), 1);
    }
    int k = 7;
    ck_assert_ptr_null(try_slot(b, "workers", 3, &k));
    ck_assert_int_eq(k, -1);
    ck_assert_int_eq(proc_refusals(b), 3);
    /* The same lock table that holds all three is refused too. */
    ck_assert_ptr_null(try_slot(a, "workers", 3, NULL));
    /* Another name's slots are apart. */
    ddb_lease *other = try_slot(b, "workers-eu", 3, NULL);
    ck_assert_ptr_nonnull(other);
    ddb_lease_release(other);
    for (int i = 0; i < 3; i++)
        ddb_lease_release(held[i]);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* The N+1th waits; a release frees a slot, which it gets at its next poll (a third of the
 * holder's lease), with that slot's next token. */
START_TEST(test_waiter_gets_released_slot)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *held[2];
    int ks[2];
    for (int i = 0; i < 2; i++) {
        held[i] = try_slot(a, "render", 2, &ks[i]);
        ck_assert_ptr_nonnull(held[i]);
    }
    slot_bg w;
    slot_bg_start(&w, b, "render", 2);
    proc_wait_refusals(b, 2);
    ddb_lease_release(held[1]);
    cx_advance(LEASE / 3 - 1);
    ck_assert(!atomic_load(&w.done));
    cx_advance(1);
    ck_assert_msg(slot_bg_join(&w) == 0, "%s", w.err.message);
    ck_assert_ptr_nonnull(w.lease);
    ck_assert_int_eq(w.slot, ks[1]);
    ck_assert_int_eq(ddb_lease_fencing_token(w.lease), 2);
    ck_assert(!ddb_lease_takeover(w.lease));
    ddb_lease_release(w.lease);
    ddb_lease_release(held[0]);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* Each slot is a lock of its own: the tokens of one slot go up while the other's stay. */
START_TEST(test_tokens_per_slot)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    int k0 = -1, k1 = -1;
    ddb_lease *steady = try_slot(a, "uploads", 2, &k0);
    ddb_lease *moving = try_slot(a, "uploads", 2, &k1);
    ck_assert(steady && moving && k0 != k1);
    for (int64_t expect = 2; expect <= 5; expect++) {
        ddb_lease_release(moving);
        int k = -1;
        moving = try_slot(b, "uploads", 2, &k);
        ck_assert_ptr_nonnull(moving);
        ck_assert_int_eq(k, k1);
        ck_assert_int_eq(ddb_lease_fencing_token(moving), expect);
    }
    char name[DDB_LOCK_NAME_SIZE];
    slot_name("uploads", k0, name);
    ddb__lock_item li;
    cx_read(b, name, &li);
    ck_assert(li.held);
    ck_assert_int_eq(li.fence, 1);
    ck_assert_str_eq(li.owner, ddb_lease_owner(steady));
    ddb__lock_item_cleanup(&li);
    ddb_lease_release(steady);
    ddb_lease_release(moving);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A holder that crashed (it never renews) is taken over after a whole lease of its, seen
 * unchanged by the waiter; the token of that slot goes up by one. */
START_TEST(test_crashed_slot_taken_over)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    char n0[DDB_LOCK_NAME_SIZE], n1[DDB_LOCK_NAME_SIZE];
    slot_name("batch", 0, n0);
    slot_name("batch", 1, n1);
    cx_sim_holder(a, n0, 9000, "crashed-0");
    cx_sim_holder(a, n1, 9000, "crashed-1");
    slot_bg w;
    slot_bg_start(&w, b, "batch", 2);
    proc_wait_refusals(b, 2);
    cx_advance(3000);
    proc_wait_refusals(b, 4);
    cx_advance(3000);
    proc_wait_refusals(b, 6);
    ck_assert(!atomic_load(&w.done));
    cx_advance(3000);
    ck_assert_msg(slot_bg_join(&w) == 0, "%s", w.err.message);
    ck_assert_ptr_nonnull(w.lease);
    ck_assert(ddb_lease_takeover(w.lease));
    ck_assert_int_eq(ddb_lease_fencing_token(w.lease), 2);
    ck_assert(w.slot == 0 || w.slot == 1);
    ddb_lease_release(w.lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A wait bounded on the client's clock ends cancelled when it runs out, and a wait that is
 * cancelled holds nothing: every slot still has its holder, and once they release, no
 * slot has an owner. */
START_TEST(test_timeout_and_cancel_hold_nothing)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *held[2];
    for (int i = 0; i < 2; i++)
        held[i] = try_slot(a, "pool", 2, NULL);
    ck_assert(held[0] && held[1]);

    slot_bg t;
    slot_bg_start(&t, b, "pool", 2);
    ck_assert_int_eq(ddb_cancel_after(t.stop, CX.fx.clock, 5000), 0);
    proc_wait_refusals(b, 2);
    cx_advance(5000);
    ck_assert_int_eq(slot_bg_join(&t), DDB_ECANCELED);
    ck_assert_ptr_null(t.lease);
    ck_assert_int_eq(t.slot, -1);

    long before = proc_refusals(b);
    slot_bg w;
    slot_bg_start(&w, b, "pool", 2);
    proc_wait_refusals(b, before + 2);
    ddb_cancel_set(w.stop);
    ck_assert_int_eq(slot_bg_join(&w), DDB_ECANCELED);
    ck_assert_ptr_null(w.lease);
    ck_assert_msg(strstr(w.err.message, "pool"), "%s", w.err.message);

    for (int k = 0; k < 2; k++) {
        char name[DDB_LOCK_NAME_SIZE];
        slot_name("pool", k, name);
        ddb__lock_item li;
        cx_read(a, name, &li);
        ck_assert(li.held);
        ck_assert(strcmp(li.owner, ddb_lease_owner(held[0])) == 0 ||
                  strcmp(li.owner, ddb_lease_owner(held[1])) == 0);
        ddb__lock_item_cleanup(&li);
    }
    ddb_lease_release(held[0]);
    ddb_lease_release(held[1]);
    for (int k = 0; k < 2; k++) {
        char name[DDB_LOCK_NAME_SIZE];
        slot_name("pool", k, name);
        ddb__lock_item li;
        cx_read(a, name, &li);
        ck_assert(!li.held);
        ck_assert_int_eq(li.fence, 1);
        ddb__lock_item_cleanup(&li);
    }
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A slot's write whose answer was lost, and the read that would tell failing too: in
 * doubt, and what it may hold is handed back, so the slot is free at once. */
START_TEST(test_slot_in_doubt_hands_back)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ck_assert_int_gt(fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_LOST_RESPONSE,
                                                                 .operation = "UpdateItem",
                                                                 .count = 1}),
                     0);
    ck_assert_int_gt(fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                                                 .operation = "GetItem",
                                                                 .error_type = "InternalServerError",
                                                                 .count = 1}),
                     0);
    ddb_lease *lease = NULL;
    int k = 5;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_acquire_slot(a->locks, "single", 1, LEASE, NULL, &lease, &k,
                                           NULL, &err),
                     DDB_EINDOUBT);
    ck_assert_ptr_null(lease);
    ck_assert_int_eq(k, -1);
    ck_assert_msg(strstr(err.message, "in doubt") && strstr(err.message, "free again"), "%s",
                  err.message);
    char name[DDB_LOCK_NAME_SIZE];
    slot_name("single", 0, name);
    ddb__lock_item li;
    cx_read(b, name, &li);
    ck_assert(!li.held);
    ddb__lock_item_cleanup(&li);
    ddb_lease *other = try_slot(b, "single", 1, NULL);
    ck_assert_ptr_nonnull(other);
    ck_assert_int_eq(ddb_lease_fencing_token(other), 2);
    ddb_lease_release(other);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* Contenders start at a random slot: forty single acquires of four free slots do not all
 * land on one slot (the chance that they would is 4^-39). */
START_TEST(test_start_slot_spreads)
{
    proc *a = cx_proc(NULL);
    int count[4] = {0};
    for (int i = 0; i < 40; i++) {
        int k = -1;
        ddb_lease *lease = try_slot(a, "spread", 4, &k);
        ck_assert_ptr_nonnull(lease);
        count[k]++;
        ddb_lease_release(lease);
    }
    int used = 0;
    for (int k = 0; k < 4; k++)
        used += count[k] > 0;
    ck_assert_int_gt(used, 1);
    cx_proc_free(a);
}
END_TEST

static int never(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    (void)lease;
    (void)stop;
    (void)arg;
    (void)err;
    ck_abort_msg("the work must not run");
    return 0;
}

/* Bad input is refused before any request; slot names are the slots' alone. */
START_TEST(test_bad_input_and_reserved_names)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = NULL;
    ddb_error err;
    long before = cx_fakedb() ? cx_requests(NULL) : 0;
    int bad[] = {0, -1, DDB_LOCK_SLOTS_MAX + 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(ddb_lock_acquire_slot(a->locks, "job", bad[i], LEASE, NULL, &lease,
                                               NULL, NULL, &err),
                         DDB_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "slots"));
    }
    ck_assert_int_eq(ddb_lock_acquire_slot(a->locks, "with space", 2, LEASE, NULL, &lease,
                                           NULL, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_acquire_slot(a->locks, "job", 2, 10, NULL, &lease, NULL, NULL,
                                           &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_acquire_slot(a->locks, "job", 2, LEASE, NULL, NULL, NULL, NULL,
                                           &err),
                     DDB_EINVAL);
    /* 250 bytes and "#slot1": 256, one more than a lock name may have. */
    char longname[251];
    memset(longname, 'n', 250);
    longname[250] = '\0';
    ck_assert_int_eq(ddb_lock_acquire_slot(a->locks, longname, 2, LEASE, NULL, &lease, NULL,
                                           NULL, &err),
                     DDB_EINVAL);
    ck_assert_msg(strstr(err.message, "too long for slots"), "%s", err.message);
    longname[249] = '\0'; /* 249 + "#slot1" = 255 */
    char buf[DDB_LOCK_NAME_SIZE];
    ck_assert_int_eq(ddb_lock_slot_name(longname, 1, buf, sizeof buf, &err), 0);
    ck_assert_int_eq(strlen(buf), 255);
    ck_assert_int_eq(ddb_lock_slot_name("job", 1, buf, 6, &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_slot_name("job", DDB_LOCK_SLOTS_MAX, buf, sizeof buf, &err),
                     DDB_EINVAL);
    if (cx_fakedb())
        ck_assert_int_eq(cx_requests(NULL), before);

    /* What is a slot's name, and what is not. */
    size_t base = 0;
    int k = -1;
    ck_assert(ddb_lock_slot_parse("job#slot0", &base, &k) && base == 3 && k == 0);
    ck_assert(ddb_lock_slot_parse("a#slot1#slot42", &base, &k) && base == 7 && k == 42);
    const char *not_slots[] = {"job", "#slot1", "job#slot", "job#slot01", "job#slotx",
                               "job#Slot1", "job#slot1234567890", "job-slot1"};
    for (size_t i = 0; i < sizeof not_slots / sizeof not_slots[0]; i++)
        ck_assert_msg(!ddb_lock_slot_parse(not_slots[i], NULL, NULL), "%s", not_slots[i]);

    /* A plain acquire refuses a slot's name; reads take it as any lock's. */
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job#slot1", LEASE, &lease, NULL, &err),
                     DDB_EINVAL);
    ck_assert_msg(strstr(err.message, "ddb_lock_acquire_slot"), "%s", err.message);
    ck_assert_int_eq(ddb_lock_acquire(a->locks, "job#slot1", LEASE, &lease, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_run_as_leader(a->locks, "job#slot1", LEASE, never, NULL, NULL,
                                            &err),
                     DDB_EINVAL);
    ddb_lease *held = try_slot(a, "job", 2, &k);
    ck_assert_ptr_nonnull(held);
    slot_name("job", k, buf);
    ddb_lock_state st;
    ck_assert_int_eq(ddb_lock_table_get_state(a->locks, buf, &st, NULL, &err), 0);
    ck_assert(st.is_held);
    ck_assert_int_eq(st.fencing_token, 1);
    /* Names that look alike but are no slot's are plain locks. */
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job#slot01", LEASE, &lease, NULL, &err),
                     0);
    ck_assert_ptr_nonnull(lease);
    ddb_lease_release(lease);
    ddb_lease_release(held);
    cx_proc_free(a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("slots");
    TCase *tc = tcase_create("slots");
    tcase_add_checked_fixture(tc, cx_setup, cx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_n_holders_then_refused);
    tcase_add_test(tc, test_waiter_gets_released_slot);
    tcase_add_test(tc, test_tokens_per_slot);
    tcase_add_test(tc, test_crashed_slot_taken_over);
    tcase_add_test(tc, test_timeout_and_cancel_hold_nothing);
    tcase_add_test(tc, test_slot_in_doubt_hands_back);
    tcase_add_test(tc, test_start_slot_spreads);
    tcase_add_test(tc, test_bad_input_and_reserved_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
