/* release.c: `dynalock release NAME --if-token N [--owner ID]`, a lock handed back by
 * hand for an operator whose holder is stuck. It is conditional on the holder the
 * operator was shown (libddb_coord's ddb_lock_release_if): a holder that took the lock
 * since, with a newer token, is never cleared; the command then exits 77. */
#include <stdio.h>

#include "cli.h"

int cli_cmd_release(cli_opts *o)
{
    const char *name = o->args[0];
    if (o->if_token < 1)
        return cli_usage_error(o->command, "missing --if-token N (the fencing token that "
                               "'dynalock state' shows)");
    if (o->owner && !*o->owner)
        return cli_usage_error(o->command, "--owner must not be empty");
    cli_conn c;
    int rc = cli_conn_open(&c, o, true, true);
    if (rc)
        return rc;
    ddb_error err;
    ddb_error_clear(&err);
    char what[512];
    snprintf(what, sizeof what, "cannot release lock '%s' on table '%s'", name, o->table);
    cli_req req;
    cli_req_begin(&req, "UpdateItem", what, true);
    bool released = false;
    rc = ddb_lock_release_if(c.locks, name, o->owner, o->if_token, &released, cli_stop(),
                             &err);
    if (rc) {
        rc = cli_req_fail(&req, rc, &err);
        cli_conn_close(&c);
        return rc;
    }
    cli_req_end(&req);
    if (o->json) {
        fputs("{\"name\":", stdout);
        cli_json_string(name);
        fputs(",\"table\":", stdout);
        cli_json_string(o->table);
        printf(",\"if_token\":%lld,\"owner\":", (long long)o->if_token);
        cli_json_string(o->owner);
        printf(",\"released\":%s}\n", released ? "true" : "false");
    } else {
        char safe[4 * 256];
        cli_safe_text(name, safe, sizeof safe);
        if (released)
            printf("lock '%s' is released (fencing token %lld); the next holder gets %lld\n",
                   safe, (long long)o->if_token, (long long)o->if_token + 1);
        else
            fprintf(stderr,
                    "%s: lock '%s' was not released: it is not held with fencing token %lld%s "
                    "any more (taken over, released or deleted since); see 'dynalock "
                    "state'\n",
                    cli_progname, safe, (long long)o->if_token,
                    o->owner ? " by that owner" : "");
    }
    cli_conn_close(&c);
    if (fflush(stdout) != 0)
        return CLI_EXIT_IOERR;
    return released ? 0 : CLI_EXIT_REFUSED;
}
