/* run.c: `dynalock run NAME -- CMD...`, flock(1) across machines: acquire the lock, run
 * CMD with the lease in its environment, release the lock once CMD exits and exit with
 * its status. A lost lease stops CMD (SIGTERM, then SIGKILL) and exits 76. With --slots N,
 * the lock is any free one of N slots (ddb_lock_acquire_slot), and CMD gets DYNALOCK_SLOT. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
    if (o->slots) {
        /* Each slot has a holder of its own: the count says it all. */
        cli_error("lock '%s' not acquired: all %d of its slots are held%s", name, o->slots,
                  waited);
        return;
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

/* --verbose: after each refusal (a poll that found the lock held), a thread of its own
 * reads the lock's state (one GetItem; the refusal hook may not call into the lock
 * table) and says what the command waits for: a line each poll, or on a terminal one
 * line rewritten in place and cleared at the end. */
typedef struct waiter {
    cli_conn *c;
    const char *name;
    int slots;                 /* --slots: a line per pass over the slots, no read */
    long slot_refusals;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long refusals, shown;
    bool done;
    bool tty;
    bool drawn;                /* a line is on the terminal, not ended */
    char last_holder[DDB_HOLDER_LABEL_MAX_BYTES + 1];
} waiter;

static void on_refusal(void *arg, const char *name)
{
    (void)name;
    waiter *w = arg;
    pthread_mutex_lock(&w->mu);
    /* With slots, each pass is refused once per slot: one line a pass. */
    if (w->slots && ++w->slot_refusals % w->slots != 0) {
        pthread_mutex_unlock(&w->mu);
        return;
    }
    w->refusals++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void waiter_show(waiter *w)
{
    char name[1100], line[8192];
    if (w->slots) {
        snprintf(line, sizeof line, "waiting for a slot of '%s': all %d held",
                 cli_safe_text(w->name, name, sizeof name), w->slots);
        if (w->tty) {
            fprintf(stderr, "\r\033[K%s: %s", cli_progname, line);
            w->drawn = true;
        } else {
            fprintf(stderr, "%s: %s\n", cli_progname, line);
        }
        fflush(stderr);
        return;
    }
    ddb_lock_state st;
    ddb_error err;
    ddb_error_clear(&err);
    ddb_cancel *limit = cli_deadline(1000);
    int rc = limit ? ddb_lock_table_get_state(w->c->locks, w->name, &st, limit, &err)
                   : DDB_ENOMEM;
    ddb_cancel_unref(limit);
    cli_safe_text(w->name, name, sizeof name);
    if (rc == 0 && st.is_held) {
        char holder[4 * DDB_HOLDER_LABEL_MAX_BYTES + 8], lease[32], unchanged[32];
        cli_safe_text(st.holder_label[0] ? st.holder_label : "another process", holder,
                      sizeof holder);
        cli_format_duration(st.lease_ms, lease, sizeof lease);
        cli_format_duration(st.unchanged_ms / 1000 * 1000, unchanged, sizeof unchanged);
        snprintf(line, sizeof line, "waiting for '%s': held by '%s' (token %lld, lease %s, "
                 "unchanged %s)", name, holder, (long long)st.fencing_token, lease, unchanged);
        pthread_mutex_lock(&w->mu);
        snprintf(w->last_holder, sizeof w->last_holder, "%s", st.holder_label);
        pthread_mutex_unlock(&w->mu);
    } else if (rc == 0) {
        snprintf(line, sizeof line, "waiting for '%s': free now, trying again", name);
    } else {
        snprintf(line, sizeof line, "waiting for '%s': its holder is not known (%s)", name,
                 ddb_error_string(rc));
    }
    if (w->tty) {
        fprintf(stderr, "\r\033[K%s: %s", cli_progname, line);
        w->drawn = true;
    } else {
        fprintf(stderr, "%s: %s\n", cli_progname, line);
    }
    fflush(stderr);
}

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->done && w->refusals == w->shown)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->done)
            break;
        w->shown = w->refusals;
        pthread_mutex_unlock(&w->mu);
        waiter_show(w);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    if (w->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    return NULL;
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
    waiter w = {.c = c, .name = name, .slots = o->slots, .tty = isatty(STDERR_FILENO) == 1};
    pthread_t wt;
    memset(&wt, 0, sizeof wt);
    long watch = 0;
    int64_t t0 = ddb_clock_mono_ns(ddb_client_clock(c->client));
    if (o->verbose) {
        pthread_mutex_init(&w.mu, NULL);
        pthread_cond_init(&w.cv, NULL);
        if (pthread_create(&wt, NULL, waiter_main, &w) == 0) {
            watch = ddb_lock_table_watch_refusals(c->locks, on_refusal, &w, NULL);
            if (watch <= 0) {
                pthread_mutex_lock(&w.mu);
                w.done = true;
                pthread_cond_signal(&w.cv);
                pthread_mutex_unlock(&w.mu);
                pthread_join(wt, NULL);
                watch = 0;
            }
        }
    }
    cli_req req;
    cli_req_begin(&req, "the acquire", what, false);
    ddb_lock_slot_options so = {.no_wait = o->wait_ms == 0};
    if (o->wait_ms == 0) {
        rc = o->slots ? ddb_lock_acquire_slot(c->locks, name, o->slots, o->lease_ms, &so, lease,
                                              NULL, stop, &err)
                      : ddb_lock_try_acquire(c->locks, name, o->lease_ms, lease, stop, &err);
    } else if (o->wait_ms > 0) {
        ddb_cancel *wait = ddb_cancel_new_linked(stop);
        if (!wait)
            return cli_req_fail(&req, DDB_ENOMEM, NULL);
        rc = ddb_cancel_after(wait, ddb_client_clock(c->client), o->wait_ms);
        if (rc == 0)
            rc = o->slots ? ddb_lock_acquire_slot(c->locks, name, o->slots, o->lease_ms, &so,
                                                  lease, NULL, wait, &err)
                          : ddb_lock_acquire(c->locks, name, o->lease_ms, lease, wait, &err);
        ddb_cancel_unref(wait);
    } else {
        rc = o->slots ? ddb_lock_acquire_slot(c->locks, name, o->slots, o->lease_ms, &so, lease,
                                              NULL, stop, &err)
                      : ddb_lock_acquire(c->locks, name, o->lease_ms, lease, stop, &err);
    }
    cli_req_end(&req);
    if (watch > 0) {
        ddb_lock_table_unwatch_refusals(c->locks, watch);
        pthread_mutex_lock(&w.mu);
        w.done = true;
        pthread_cond_signal(&w.cv);
        pthread_mutex_unlock(&w.mu);
        pthread_join(wt, NULL);
    }
    if (o->verbose) {
        pthread_mutex_destroy(&w.mu);
        pthread_cond_destroy(&w.cv);
    }
    if (o->verbose && rc == 0 && *lease) {
        int64_t took = ddb_clock_mono_ns(ddb_client_clock(c->client)) - t0;
        char n[1100], from[4 * DDB_HOLDER_LABEL_MAX_BYTES + 32] = "";
        if (ddb_lease_takeover(*lease)) {
            char h[4 * DDB_HOLDER_LABEL_MAX_BYTES + 8];
            snprintf(from, sizeof from, " (took over from %s)",
                     w.last_holder[0] ? cli_safe_text(w.last_holder, h, sizeof h)
                                      : "a holder that stopped");
        }
        /* With slots, the slot's lock: its token is that slot's. */
        fprintf(stderr, "%s: acquired '%s' with token %lld after %.1fs%s\n", cli_progname,
                cli_safe_text(ddb_lease_name(*lease), n, sizeof n),
                (long long)ddb_lease_fencing_token(*lease),
                (double)took / 1e9, from);
    }
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
    /* From here on, the lock held: NAME, or with --slots the slot's lock NAME#slotK. */
    name = ddb_lease_name(lease);
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
