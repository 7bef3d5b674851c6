/* simulate.c: `dynalock simulate holder|release|delete NAME`, what other processes do to
 * a lock, for test scripts: a holder that crashed, a release by whoever held it, the item
 * deleted. They write without conditions (libddb_coord's ddb_lock_force_*): tests only. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_cmd_simulate(cli_opts *o)
{
    const char *action = o->args[0];
    const char *name = o->args[1];
    if (strcmp(action, "holder") != 0 && strcmp(action, "release") != 0 &&
        strcmp(action, "delete") != 0)
        return cli_usage_error(o->command, "unknown action '%s' (holder, release or delete)",
                               action);
    cli_conn c;
    int rc = cli_conn_open(&c, o, true, true);
    if (rc)
        return rc;
    ddb_error err;
    ddb_error_clear(&err);
    int64_t token = 0;
    const char *label = o->label_given ? o->label : "simulated";
    char what[512];
    snprintf(what, sizeof what, "cannot simulate %s of lock '%s' on table '%s'", action,
             name, o->table);
    cli_req req;
    cli_req_begin(&req, strcmp(action, "delete") == 0 ? "DeleteItem" : "UpdateItem", what,
                  true);
    if (strcmp(action, "holder") == 0)
        rc = ddb_lock_force_hold(c.locks, name, o->lease_ms, label, &token, cli_stop(), &err);
    else if (strcmp(action, "release") == 0)
        rc = ddb_lock_force_release(c.locks, name, cli_stop(), &err);
    else
        rc = ddb_lock_force_delete(c.locks, name, cli_stop(), &err);
    if (rc == 0)
        cli_req_end(&req);
    if (rc) {
        rc = cli_req_fail(&req, rc, &err);
    } else if (o->json) {
        fputs("{\"name\":", stdout);
        cli_json_string(name);
        fputs(",\"action\":", stdout);
        cli_json_string(action);
        if (strcmp(action, "holder") == 0) {
            fputs(",\"holder\":", stdout);
            cli_json_string(label);
            printf(",\"fencing_token\":%lld", (long long)token);
        }
        puts("}");
    } else {
        /* Human output: names and labels with their control characters escaped. */
        char sname[4 * 256], slabel[4 * DDB_HOLDER_LABEL_MAX_BYTES + 1];
        cli_safe_text(name, sname, sizeof sname);
        if (strcmp(action, "holder") == 0) {
            char lease[32];
            cli_format_duration(o->lease_ms, lease, sizeof lease);
            printf("lock '%s' is held by '%s' with fencing token %lld for a lease of %s, "
                   "never renewed\n",
                   sname, cli_safe_text(label, slabel, sizeof slabel), (long long)token,
                   lease);
        } else if (strcmp(action, "release") == 0) {
            printf("lock '%s' is released\n", sname);
        } else {
            printf("lock '%s' has no item any more; its next fencing token is 1\n", sname);
        }
    }
    cli_conn_close(&c);
    return rc;
}
