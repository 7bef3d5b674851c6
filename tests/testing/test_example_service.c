/* test_example_service.c: the complete example of docs/testing.md -- a test of a service
 * that leads. The service sweeps orders while it leads, each write fenced with the
 * lease; the test plays the other processes with libddb_testing and moves time with the
 * fake clock, never sleeping. */
#include <check.h>

#include "dl_check.h"
#include <dynalock/testing.h>
#include <pthread.h>
#include <stdlib.h>

/* snippet:service */
/* The service under test: while it leads, it marks one order shipped per round, each
 * write fenced by the lease, and waits 10 s between rounds on the client's clock. */
typedef struct sweeper {
    ddb_lock_table *locks;
    ddb_table *orders;
    ddb_cancel *stop;
    ddb_cancel *wrote; /* set after the first fenced write: what a test waits for */
    int rounds;        /* rounds written while leading */
    int rc;            /* what ddb_lock_run_as_leader returned */
} sweeper;

static int sweep(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    sweeper *s = arg;
    ddb_client *client = ddb_table_client(s->orders);
    while (!ddb_cancel_is_set(stop)) {
        ddb_item *order = ddb_item_new();
        ddb_item_set_s(order, "pk", "ORDER#1");
        ddb_item_set_s(order, "sk", "ORDER");
        ddb_item_set_s(order, "status", "shipped");
        ddb_item_set_i64(order, "token", ddb_lease_fencing_token(lease));
        ddb_tx *tx = ddb_tx_new(client);
        ddb_tx_marker held;
        ddb_tx_check_current_lease(tx, &held, err); /* the lease of this term */
        ddb_tx_put(tx, s->orders, order, NULL, NULL, NULL);
        int rc = ddb_tx_send(tx, stop, err);
        if (rc == 0) {
            s->rounds++;
            ddb_cancel_set(s->wrote);
        }
        ddb_tx_free(tx);
        ddb_item_free(order);
        if (rc != 0 && rc != DDB_ETXCANCELED && rc != DDB_ECANCELED)
            return rc; /* a fault of the work */
        ddb_clock_sleep(ddb_client_clock(client), 10000, stop);
    }
    return 0;
}

static void *run_sweeper(void *arg)
{
    sweeper *s = arg;
    ddb_error err;
    s->rc = ddb_lock_run_as_leader(s->locks, "order-sweeper", 30000, sweep, s, s->stop, &err);
    return NULL;
}
/* snippet:end */

/* snippet:test */
START_TEST(sweeper_takes_over_from_a_crashed_leader)
{
    ddb_error err;
    ddb_test_server *fake = ddb_test_server_start(NULL, &err);
    ck_assert_int_eq(ddb_test_server_create_table(fake, "Shop", "pk", "sk", &err), 0);
    ddb_client *client = ddb_test_server_client_new(fake, NULL, &err);
    ddb_table *shop = ddb_table_open(client, "Shop", "pk", "sk", &err);
    ddb_lock_table *locks = ddb_lock_table_new(shop, NULL, &err);

    /* Another pod leads, and crashes: it holds the lock and never renews it. */
    int64_t token = 0;
    ck_assert_int_eq(ddb_lock_simulate_holder(locks, "order-sweeper", 30000, "other-pod",
                                              &token, &err), 0);
    ck_assert_int_eq(token, 1);

    /* The service starts, finds the lock held, and waits. */
    ddb_refusal_watch *refused = ddb_refusal_watch_new(locks, "order-sweeper", &err);
    sweeper s = {.locks = locks, .orders = shop, .stop = ddb_cancel_new(),
                 .wrote = ddb_cancel_new()};
    pthread_t thread;
    pthread_create(&thread, NULL, run_sweeper, &s);
    ck_assert_int_eq(ddb_refusal_watch_wait(refused, 10000, NULL), 0);
    ck_assert_int_eq(s.rounds, 0);

    /* After a whole lease without renewal, it takes over, with the token raised. */
    for (int i = 0; i < 3; i++)
        ddb_test_server_advance(fake, 10000);
    ddb_lock_state state;
    ck_assert_int_eq(ddb_lock_get_state(locks, "order-sweeper", &state, &err), 0);
    ck_assert(state.is_held);
    ck_assert_int_eq(state.fencing_token, 2);
    /* Its work is its own: wait for the event it signals, its first fenced write. */
    ck_assert_int_eq(ddb_cancel_wait(s.wrote, 10000), 0);

    /* Shutdown releases the lease, and the election ends with a cancellation. */
    ddb_cancel_set(s.stop);
    pthread_join(thread, NULL);
    ck_assert_int_eq(s.rc, DDB_ECANCELED);
    ck_assert_int_eq(ddb_lock_get_state(locks, "order-sweeper", &state, &err), 0);
    ck_assert(!state.is_held);

    ddb_refusal_watch_free(refused);
    ddb_cancel_unref(s.stop);
    ddb_cancel_unref(s.wrote);
    ddb_lock_table_free(locks);
    ddb_table_close(shop);
    ddb_client_free(client);
    ddb_test_server_stop(fake);
}
END_TEST
/* snippet:end */

int main(void)
{
    Suite *suite = suite_create("example_service");
    TCase *tc = tcase_create("leader");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sweeper_takes_over_from_a_crashed_leader);
    suite_add_tcase(suite, tc);
    return dl_check_run(suite);
}
