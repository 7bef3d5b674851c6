/* leader.c: `dynalock leader NAME -- CMD...`, leader election for any program, with the
 * semantics of a hosted service: CMD runs while this process leads; CMD exiting 0 hands
 * the lock on; CMD failing is a fault of the work (logged, paused, contended again); a
 * lost lease stops CMD and contends again; an error of the election ends dynalock. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct leader_ctx {
    cli_opts *o;
    cli_conn *c;
    const char *name;
    int fatal;        /* an exit status that ends dynalock (CMD cannot be run), or 0 */
    long terms;
    cli_req req;      /* the election's requests, for the watchdog */
    char what[512];
    char releasing[512];
} leader_ctx;

static void fail_work(ddb_error *err, const char *message)
{
    if (!err)
        return;
    ddb_error_clear(err);
    err->code = DDB_EWORK;
    snprintf(err->message, sizeof err->message, "%s", message);
}

/* The work of one term: CMD, from its start to its exit. */
static int lead(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    leader_ctx *x = arg;
    x->terms++;
    char token[32];
    snprintf(token, sizeof token, "%lld", (long long)ddb_lease_fencing_token(lease));
    ddb_log_field fields[] = {{"lock", x->name}, {"fencing_token", token},
                              {"takeover", ddb_lease_takeover(lease) ? "true" : "false"}};
    cli_log(x->c, DDB_LOG_INFO, "leading; starting CMD", fields, 3);

    cli_env env;
    if (cli_env_init(&env) != 0 || cli_env_for_lease(&env, x->o, x->c, lease) != 0) {
        cli_env_cleanup(&env);
        x->fatal = CLI_EXIT_OSERR;
        fail_work(err, "out of memory");
        return -1;
    }
    cli_child ch;
    int rc = 0;
    if (ddb_cancel_is_set(ddb_lease_ended(lease))) {
        /* The lease ended before CMD could start: this term runs nothing. */
        memset(&ch, 0, sizeof ch);
        ch.lost = true;
        ch.exited = true;
    } else {
        rc = cli_child_spawn(&ch, x->o->cmd, env.vars);
        if (rc == 0)
            rc = cli_child_wait(&ch, lease, x->o->kill_after_ms);
    }
    cli_env_cleanup(&env);
    if (ddb_cancel_is_set(cli_stop())) {
        /* dynalock is stopping: what follows is the release, which the watchdog bounds. */
        cli_req_begin(&x->req, "UpdateItem", x->releasing, false);
        cli_req_on_stop(&x->req, CLI_EXIT_OK, "the lock frees itself once its lease runs out");
    }
    if (rc != 0) {
        x->fatal = rc; /* CMD cannot be run: contending again would change nothing */
        fail_work(err, "CMD could not be run");
        return -1;
    }
    char what[96] = "did not start";
    if (ch.pid)
        cli_child_describe(&ch, what, sizeof what);
    if (ch.lost) {
        ddb_log_field lost[] = {
            {"lock", x->name}, {"fencing_token", token},
            {"reason", ddb_loss_reason_name(ddb_lease_loss_reason(lease))}, {"cmd", what}};
        cli_log(x->c, DDB_LOG_WARN, "lease lost; CMD stopped; contending again", lost, 4);
        return 0;
    }
    if (ddb_cancel_is_set(stop))
        return 0; /* dynalock is stopping; CMD had the signal */
    if (cli_child_status(&ch) == 0)
        return 0;
    char message[160];
    snprintf(message, sizeof message, "CMD %s", what);
    fail_work(err, message);
    return -1;
}

int cli_cmd_leader(cli_opts *o)
{
    cli_conn c;
    int rc = cli_conn_open(&c, o, true, true);
    if (rc)
        return rc;
    leader_ctx x = {.o = o, .c = &c, .name = o->args[0]};
    ddb_cancel *stop = cli_stop();
    int64_t pause_ms = o->pause_ms >= 0 ? o->pause_ms : o->lease_ms / 3;
    char pause[32];
    cli_format_duration(pause_ms, pause, sizeof pause);
    ddb_log_field start[] = {{"lock", x.name}, {"table", o->table}};
    cli_log(&c, DDB_LOG_INFO, "contending for the lock", start, 2);
    snprintf(x.what, sizeof x.what, "leader election for lock '%s' on table '%s' failed",
             x.name, o->table);
    snprintf(x.releasing, sizeof x.releasing, "releasing lock '%s'", x.name);
    for (;;) {
        ddb_error err;
        ddb_error_clear(&err);
        /* Stopped by a signal, `leader` exits 0 (as documented), also when the watchdog
         * has to end it. */
        cli_req_begin(&x.req, "the election", x.what, false);
        cli_req_on_stop(&x.req, CLI_EXIT_OK, NULL);
        /* One span per round: its acquires and the terms' CMDs (TRACEPARENT) in one trace. */
        uint64_t round = cli_span_start(&c, "dynalock leader");
        rc = ddb_lock_run_as_leader(c.locks, x.name, o->lease_ms, lead, &x, stop, &err);
        cli_span_end(&c, round, -1,
                     rc == 0 || rc == DDB_ECANCELED ? NULL : ddb_error_name(rc));
        cli_req_end(&x.req);
        if (x.fatal) {
            rc = x.fatal;
            break;
        }
        if (rc == DDB_ECANCELED || ddb_cancel_is_set(stop)) {
            rc = CLI_EXIT_OK; /* stopped by a signal: the lease was released */
            break;
        }
        if (rc == 0) {
            if (o->once)
                break;
            ddb_log_field fields[] = {{"lock", x.name}, {"pause", pause}};
            cli_log(&c, DDB_LOG_INFO, "CMD finished; lock handed on; contending again after "
                    "the pause", fields, 2);
        } else if (rc == DDB_EWORK) {
            ddb_log_field fields[] = {{"lock", x.name}, {"error", err.message},
                                      {"pause", pause}};
            cli_log(&c, DDB_LOG_WARN, "CMD failed; lock handed on; contending again after "
                    "the pause", fields, 3);
        } else {
            rc = cli_req_fail(&x.req, rc, &err);
            break;
        }
        if (ddb_clock_sleep(ddb_client_clock(c.client), pause_ms, stop) == DDB_ECANCELED) {
            rc = CLI_EXIT_OK;
            break;
        }
    }
    cli_conn_close(&c);
    return rc;
}
