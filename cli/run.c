/* run.c: `dynalock run NAME -- CMD...`, flock(1) across machines: acquire the lock, run
 * CMD with the lease in its environment, release the lock once CMD exits and exit with
 * its status. A lost lease stops CMD (SIGTERM, then SIGKILL) and exits 76. */
#include <stdio.h>
#include <string.h>

#include <dynalock/testing.h>

#include "cli.h"

/* One line on why the lock was not acquired, naming its holder when it can be read. */
static void report_not_acquired(cli_conn *c, const cli_opts *o, const char *name)
{
    ddb_lock_state st;
    memset(&st, 0, sizeof st);
    ddb_error err;
    char holder[DDB_HOLDER_LABEL_MAX + 64] = "another process";
    if (ddb_lock_get_state(c->locks, name, &st, &err) == 0 && st.is_held) {
        if (st.holder_label[0])
            snprintf(holder, sizeof holder, "'%s' (fencing token %lld)", st.holder_label,
                     (long long)st.fencing_token);
        else
            snprintf(holder, sizeof holder, "another process (fencing token %lld)",
                     (long long)st.fencing_token);
    }
    if (o->wait_ms > 0) {
        char waited[32];
        cli_format_duration(o->wait_ms, waited, sizeof waited);
        cli_error("lock '%s' not acquired: held by %s after waiting %s", name, holder, waited);
    } else {
        cli_error("lock '%s' not acquired: held by %s", name, holder);
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
    if (o->wait_ms == 0) {
        rc = ddb_lock_try_acquire(c->locks, name, o->lease_ms, stop, lease, &err);
    } else if (o->wait_ms > 0) {
        ddb_cancel *wait = ddb_cancel_new_linked(stop);
        if (!wait)
            return cli_fail("cannot acquire", DDB_ENOMEM, NULL);
        rc = ddb_cancel_after(wait, ddb_client_clock(c->client), o->wait_ms);
        if (rc == 0)
            rc = ddb_lock_acquire(c->locks, name, o->lease_ms, wait, lease, &err);
        ddb_cancel_unref(wait);
    } else {
        rc = ddb_lock_acquire(c->locks, name, o->lease_ms, stop, lease, &err);
    }
    if (rc == DDB_ECANCELED && ddb_cancel_is_set(stop)) {
        cli_error("interrupted while waiting for lock '%s'", name);
        return 128 + cli_stop_signal();
    }
    if (rc == DDB_ECANCELED || (rc == 0 && !*lease)) {
        report_not_acquired(c, o, name);
        return CLI_EXIT_NOT_ACQUIRED;
    }
    if (rc != 0) {
        char what[512];
        snprintf(what, sizeof what, "cannot acquire lock '%s' on table '%s'", name, o->table);
        return cli_fail(what, rc, &err);
    }
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
    rc = cli_child_spawn(&ch, o->cmd, env.vars);
    cli_env_cleanup(&env);
    if (rc == 0)
        rc = cli_child_wait(&ch, lease, o->kill_after_ms);
    if (rc == 0) {
        if (ch.lost) {
            char after[32];
            cli_format_duration(o->kill_after_ms, after, sizeof after);
            cli_error("lost the lease on lock '%s' (%s) while CMD ran; CMD was stopped with "
                      "SIGTERM%s%s", name, ddb_loss_reason_name(ddb_lease_loss_reason(lease)),
                      ch.killed ? " and SIGKILL after " : "", ch.killed ? after : "");
            rc = CLI_EXIT_LOST;
        } else {
            rc = cli_child_status(&ch);
        }
    }
    ddb_lease_release(lease);
    cli_conn_close(&c);
    return rc;
}
