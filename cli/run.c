/* run.c: `dynalock run NAME -- CMD...`, flock(1) across machines: acquire the lock, run
 * CMD with the lease in its environment, release the lock once CMD exits and exit with
 * its status. A lost lease stops CMD (SIGTERM, then SIGKILL) and exits 76. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* After a --wait that ran out, the state of the lock is read once more to tell who holds
 * it; the read has this much real time, so that `run --wait` returns a fraction of a
 * second after the wait whatever DynamoDB does. */
#define REPORT_READ_MS 250

/* One line on why the lock was not acquired: who holds it, if the lock can be read in
 * REPORT_READ_MS; that it is free now; or that DynamoDB did not answer. */
static void report_not_acquired(cli_conn *c, const cli_opts *o, const char *name)
{
    char waited[64] = "";
    if (o->wait_ms > 0) {
        char d[32];
        cli_format_duration(o->wait_ms, d, sizeof d);
        snprintf(waited, sizeof waited, " after waiting %s", d);
    }
    ddb_lock_state st;
    ddb_error err;
    ddb_error_clear(&err);
    cli_req req;
    cli_req_begin(&req, "GetItem", "reading the lock's holder", false);
    ddb_cancel *limit = cli_deadline(REPORT_READ_MS);
    int rc = limit ? ddb_lock_table_get_state(c->locks, name, &st, limit, &err) : DDB_ENOMEM;
    ddb_cancel_unref(limit);
    cli_req_end(&req);
    if (rc == 0 && st.is_held) {
        char holder[DDB_HOLDER_LABEL_MAX_BYTES + 64];
        if (st.holder_label[0])
            snprintf(holder, sizeof holder, "'%s' (fencing token %lld)", st.holder_label,
                     (long long)st.fencing_token);
        else
            snprintf(holder, sizeof holder, "another process (fencing token %lld)",
                     (long long)st.fencing_token);
        cli_error("lock '%s' not acquired: held by %s%s", name, holder, waited);
    } else if (rc == 0) {
        cli_error("lock '%s' not acquired%s; it is free now", name, waited);
    } else if (cli_req_unanswered(rc)) {
        char said[128];
        cli_req_describe(&req, said, sizeof said);
        cli_error("lock '%s' not acquired%s; its holder is not known: DynamoDB %s", name,
                  waited, said);
    } else {
        cli_error("lock '%s' not acquired%s; its holder is not known: %s", name, waited,
                  err.message[0] ? err.message : ddb_error_string(rc));
    }
}

/* Acquires as --wait says. 0 with *lease, or an exit status after printing why. */
static int acquire(cli_conn *c, const cli_opts *o, const char *name, ddb_lease **lease)
{
    ddb_error err;
    ddb_error_clear(&err);
    ddb_cancel *stop = cli_stop();
    int rc;
    *lease = NULL;
    char patience[32];
    cli_format_duration(o->wait_ms, patience, sizeof patience);
    ddb_log_field fields[] = {{"lock", name}, {"table", o->table}, {"wait", patience}};
    cli_log(c, DDB_LOG_INFO, "acquiring the lock", fields, 3);
    char what[512];
    snprintf(what, sizeof what, "cannot acquire lock '%s' on table '%s'", name, o->table);
    cli_req req;
    cli_req_begin(&req, "the acquire", what, false);
    if (o->wait_ms == 0) {
        rc = ddb_lock_try_acquire(c->locks, name, o->lease_ms, lease, stop, &err);
    } else if (o->wait_ms > 0) {
        ddb_cancel *wait = ddb_cancel_new_linked(stop);
        if (!wait)
            return cli_req_fail(&req, DDB_ENOMEM, NULL);
        rc = ddb_cancel_after(wait, ddb_client_clock(c->client), o->wait_ms);
        if (rc == 0)
            rc = ddb_lock_acquire(c->locks, name, o->lease_ms, lease, wait, &err);
        ddb_cancel_unref(wait);
    } else {
        rc = ddb_lock_acquire(c->locks, name, o->lease_ms, lease, stop, &err);
    }
    cli_req_end(&req);
    if (rc == DDB_ECANCELED && ddb_cancel_is_set(stop)) {
        /* A write of the acquire may have been cut short: if DynamoDB applied it, the lock
         * is held by a lease nobody renews, and frees itself after one lease. */
        cli_error("interrupted while waiting for lock '%s'", name);
        return 128 + cli_stop_signal();
    }
    if (rc == DDB_ECANCELED || (rc == 0 && !*lease)) {
        report_not_acquired(c, o, name);
        return o->conflict_exit;
    }
    if (rc != 0)
        return cli_req_fail(&req, rc, &err);
    return 0;
}

int cli_cmd_run(cli_opts *o)
{
    const char *name = o->args[0];
    cli_conn c;
    int rc = cli_conn_open(&c, o, true, true);
    if (rc)
        return rc;
    ddb_lease *lease = NULL;
    rc = acquire(&c, o, name, &lease);
    if (rc) {
        c.exit_code = rc;
        cli_conn_close(&c);
        return rc;
    }
    char token[32];
    snprintf(token, sizeof token, "%lld", (long long)ddb_lease_fencing_token(lease));
    ddb_log_field fields[] = {{"lock", name}, {"fencing_token", token},
                              {"takeover", ddb_lease_takeover(lease) ? "true" : "false"}};
    cli_log(&c, DDB_LOG_INFO, "lock acquired; running CMD", fields, 3);

    cli_env env;
    if (cli_env_init(&env) != 0 || cli_env_for_lease(&env, o, &c, lease) != 0) {
        cli_env_cleanup(&env);
        ddb_lease_release(lease);
        cli_conn_close(&c);
        return cli_fail("cannot run CMD", DDB_ENOMEM, NULL);
    }
    cli_child ch;
    if (ddb_cancel_is_set(ddb_lease_ended(lease))) {
        /* The lease ended before CMD could start: CMD does not run without it. */
        memset(&ch, 0, sizeof ch);
        ch.lost = true;
        ch.exited = true;
        rc = 0;
    } else {
        rc = cli_child_spawn(&ch, o->cmd, env.vars);
        if (rc == 0)
            rc = cli_child_wait(&ch, lease, o->kill_after_ms);
    }
    cli_env_cleanup(&env);
    if (rc == 0) {
        if (ch.lost) {
            char after[32];
            cli_format_duration(o->kill_after_ms, after, sizeof after);
            if (!ch.pid)
                cli_error("lost the lease on lock '%s' (%s) before CMD started; CMD did not "
                          "run", name, ddb_loss_reason_name(ddb_lease_loss_reason(lease)));
            else
                cli_error("lost the lease on lock '%s' (%s) while CMD ran; CMD was stopped "
                          "with SIGTERM%s%s", name,
                          ddb_loss_reason_name(ddb_lease_loss_reason(lease)),
                          ch.killed ? " and SIGKILL after " : "", ch.killed ? after : "");
            rc = CLI_EXIT_LOST;
        } else {
            rc = cli_child_status(&ch);
        }
    }
    /* The release waits for DynamoDB (at most the lease's time left); a signal leaves it
     * to the watchdog, which keeps CMD's status and says the lock frees itself. */
    char what[512];
    snprintf(what, sizeof what, "releasing lock '%s'", name);
    cli_req req;
    cli_req_begin(&req, "UpdateItem", what, false);
    cli_req_on_stop(&req, rc, "the lock frees itself once its lease runs out");
    ddb_lease_release(lease);
    cli_req_end(&req);
    c.exit_code = rc;
    cli_conn_close(&c);
    return rc;
}
