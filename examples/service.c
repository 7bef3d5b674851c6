/* service.c: an example service that leads for as long as it runs, as the reference's
 * hosted service does: it contends for the lock "order-sweeper", sweeps while it leads,
 * tells a fault of the work (logged; pause; contend again) from an error of the
 * election (the process exits non-zero so an orchestrator restarts it), and releases
 * the lease on SIGTERM or SIGINT.
 *
 *   AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 ./order_sweeper Shop
 */
#include <dynalock/coord.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEASE_MS 30000
#define PAUSE_MS 60000

static ddb_cancel *stopping;

static void on_signal(int sig)
{
    (void)sig;
    ddb_cancel_set_from_signal(stopping); /* async-signal-safe */
}

typedef struct sweeper {
    ddb_client *client;
    ddb_table *orders;
    bool fault;            /* a fault of the work, noted by the work itself */
    char fault_text[DDB_ERROR_MESSAGE_MAX];
} sweeper;

/* One round of work: every write goes through ddb_tx_check_lease, so a leader whose lease
 * ran out while it was paused cannot write. */
static int sweep_once(sweeper *s, ddb_lease *lease, ddb_cancel *stop, ddb_error *err)
{
    ddb_tx *tx = ddb_tx_new(s->client);
    ddb_tx_marker held;
    ddb_tx_check_lease(tx, lease, &held, NULL);
    ddb_item *mark = ddb_item_new();
    ddb_item_set_s(mark, ddb_table_pk(s->orders), "SWEEP#last");
    if (ddb_table_sk(s->orders))
        ddb_item_set_s(mark, ddb_table_sk(s->orders), "SWEEP");
    ddb_item_set_i64(mark, "token", ddb_lease_fencing_token(lease));
    ddb_tx_put(tx, s->orders, mark, NULL, NULL, NULL);
    ddb_item_free(mark);
    int rc = ddb_tx_send(tx, stop, err);
    if (rc == DDB_ETXCANCELED && ddb_tx_reason_for(tx, held) == DDB_TXFAIL_CONDITIONAL_CHECK_FAILED)
        rc = DDB_ELOST; /* the lease is lost: leave the work to the next holder */
    ddb_tx_free(tx);
    return rc;
}

static int sweep(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    sweeper *s = arg;
    ddb_clock *clock = ddb_client_clock(s->client);
    while (!ddb_cancel_is_set(stop)) {
        ddb_error e;
        int rc = sweep_once(s, lease, stop, &e);
        if (rc != 0 && !ddb_cancel_is_set(stop)) {
            /* A fault of the work: the lease is released and the loop pauses. */
            s->fault = true;
            snprintf(s->fault_text, sizeof s->fault_text, "%s", e.message);
            return 0;
        }
        ddb_clock_sleep(clock, 60000, stop);
    }
    (void)err;
    return 0;
}

int main(int argc, char **argv)
{
    const char *table_name = argc > 1 ? argv[1] : "Shop";
    char host[256] = "order-sweeper";
    gethostname(host, sizeof host - 1);

    stopping = ddb_cancel_new();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    ddb_error err;
    ddb_client *client = ddb_client_new(NULL, &err);
    if (!client) {
        fprintf(stderr, "order_sweeper: %s\n", err.message);
        return 1;
    }
    ddb_table *table = ddb_table_open(client, table_name, "pk", "sk", &err);
    ddb_lock_table *locks =
        table ? ddb_lock_table_new(table, &(ddb_lock_table_options){.holder_label = host}, &err)
              : NULL;
    if (!locks) {
        fprintf(stderr, "order_sweeper: %s\n", err.message);
        return 1;
    }
    sweeper s = {.client = client, .orders = table};
    int status = 0;
    while (!ddb_cancel_is_set(stopping)) {
        s.fault = false;
        int rc = ddb_lock_run_as_leader(locks, "order-sweeper", LEASE_MS, sweep, &s, stopping,
                                        &err);
        if (rc == DDB_ECANCELED && ddb_cancel_is_set(stopping))
            break; /* shutdown: the lease is released, another instance takes over */
        if (rc != 0) {
            /* An error of the election: contending again changes nothing. */
            fprintf(stderr, "order_sweeper: the election failed: %s (%s)\n", err.message,
                    ddb_error_name(rc));
            status = 1;
            break;
        }
        if (s.fault) {
            fprintf(stderr, "order_sweeper: the sweep failed (%s); contends again in %d s\n",
                    s.fault_text, PAUSE_MS / 1000);
            ddb_clock_sleep(ddb_client_clock(client), PAUSE_MS, stopping);
        }
    }
    ddb_lock_table_free(locks);
    ddb_table_close(table);
    ddb_client_free(client);
    ddb_cancel_unref(stopping);
    return status;
}
