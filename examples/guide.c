/* guide.c: the examples of docs/coordination.md, compiled with the build so that the
 * guide never shows code that does not build. Each function is one section's example;
 * main runs them against the endpoint in AWS_ENDPOINT_URL_DYNAMODB. */
#include <dynalock/coord.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A run-once job: wait a little longer than one lease, then give up. */
int nightly_report(ddb_lock_table *locks, ddb_cancel *ct);
int nightly_report(ddb_lock_table *locks, ddb_cancel *ct)
{
    ddb_clock *clock = ddb_client_clock(ddb_table_client(ddb_lock_table_table(locks)));
    ddb_cancel *wait = ddb_cancel_new_linked(ct);
    ddb_cancel_after(wait, clock, 40000);
    ddb_lease *lease = NULL;
    ddb_error err;
    int rc = ddb_lock_acquire(locks, "nightly-report", 30000, &lease, wait, &err);
    ddb_cancel_unref(wait);
    if (rc == DDB_ECANCELED && !ddb_cancel_is_set(ct))
        return 0; /* another process runs the report */
    if (rc != 0)
        return rc;
    ddb_cancel *stop = ddb_cancel_new_linked2(ct, ddb_lease_ended(lease));
    /* ... the work, each write under ddb_tx_check_lease(tx, lease, ..., NULL) and `stop` ... */
    ddb_cancel_unref(stop);
    ddb_lease_release(lease);
    return 0;
}

/* A long-lived process that tries on its own schedule. */
int cache_refresh(ddb_lock_table *locks, ddb_cancel *ct);
int cache_refresh(ddb_lock_table *locks, ddb_cancel *ct)
{
    ddb_lease *lease = NULL;
    ddb_error err;
    int rc = ddb_lock_try_acquire(locks, "cache-refresh", 30000, &lease, ct, &err);
    if (rc != 0)
        return rc;
    if (!lease)
        return 0; /* another process holds it; try again on the next round */
    /* ... */
    ddb_lease_release(lease);
    return 0;
}

/* Fencing: a write that commits only while the lease holds the lock. */
int ship(ddb_client *client, ddb_table *orders, ddb_lease *lease, const ddb_item *order);
int ship(ddb_client *client, ddb_table *orders, ddb_lease *lease, const ddb_item *order)
{
    ddb_tx *tx = ddb_tx_new(client);
    ddb_tx_marker held;
    ddb_tx_check_lease(tx, lease, &held, NULL);
    ddb_tx_put(tx, orders, order, &(ddb_tx_options){.condition = "attribute_not_exists(pk)"},
               NULL, NULL);
    ddb_error err;
    int rc = ddb_tx_send(tx, ddb_lease_ended(lease), &err);
    if (rc == DDB_ETXCANCELED &&
        ddb_tx_reason_for(tx, held) == DDB_TXFAIL_CONDITIONAL_CHECK_FAILED)
        rc = DDB_ELOST; /* the lease is lost: stop, and leave the work to the next holder */
    ddb_tx_free(tx);
    return rc;
}

/* The work of a leader; ddb_tx_check_current_lease checks the term's lease. */
typedef struct sweep_ctx {
    ddb_client *client;
    ddb_table *orders;
} sweep_ctx;

static int order_sweeper(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    sweep_ctx *ctx = arg;
    ddb_clock *clock = ddb_client_clock(ctx->client);
    while (!ddb_cancel_is_set(stop)) {
        ddb_tx *tx = ddb_tx_new(ctx->client);
        ddb_tx_check_current_lease(tx, NULL, NULL);
        ddb_item *order = ddb_item_new();
        ddb_item_set_s(order, "pk", "ORDER#1");
        ddb_item_set_s(order, "sk", "ORDER");
        ddb_item_set_s(order, "status", "SHIPPED");
        ddb_tx_put(tx, ctx->orders, order, NULL, NULL, NULL);
        ddb_item_free(order);
        ddb_tx_send(tx, stop, NULL);
        ddb_tx_free(tx);
        ddb_clock_sleep(clock, 60000, stop);
    }
    (void)lease;
    (void)err;
    return 0;
}

int lead(ddb_lock_table *locks, sweep_ctx *ctx, ddb_cancel *ct);
int lead(ddb_lock_table *locks, sweep_ctx *ctx, ddb_cancel *ct)
{
    ddb_error err;
    return ddb_lock_run_as_leader(locks, "order-sweeper", 30000, order_sweeper, ctx, ct, &err);
}

int main(int argc, char **argv)
{
    ddb_error err;
    ddb_client *client = ddb_client_new(NULL, &err);
    if (!client) {
        fprintf(stderr, "guide: %s\n", err.message);
        return 1;
    }
    ddb_table *shop = ddb_table_open(client, argc > 1 ? argv[1] : "Shop", "pk", "sk", &err);
    ddb_lock_table *locks = ddb_lock_table_new(shop, NULL, &err);
    ddb_cancel *ct = ddb_cancel_new();
    int rc = locks ? cache_refresh(locks, ct) : 1;
    if (rc == 0)
        rc = nightly_report(locks, ct);
    printf("guide: %s\n", ddb_error_name(rc));
    ddb_cancel_unref(ct);
    ddb_lock_table_free(locks);
    ddb_table_close(shop);
    ddb_client_free(client);
    return rc ? 1 : 0;
}
