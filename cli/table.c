/* table.c: `dynalock table create|delete NAME`, a table for the locks (or for the items
 * that fenced writes put), with string keys, on demand billing, and optionally a time to
 * live attribute. `create` waits until the table is ACTIVE. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* One line on stdout on success, for the person who typed the command: what the table
 * is now. After a create, the key schema DynamoDB describes (with --exist-ok the table
 * may be older than this command, and its keys not the ones asked for); when the read
 * fails, what was asked. */
static void say_done(cli_conn *c, const cli_opts *o, bool create, const char *name)
{
    char safe[1024];
    if (!create) {
        printf("deleted table '%s'\n", cli_safe_text(name, safe, sizeof safe));
        return;
    }
    ddb_table_info info;
    ddb_error err;
    ddb_error_clear(&err);
    ddb_cancel *limit = cli_deadline(2000);
    int rc = limit ? ddb_client_describe_table(c->client, name, &info, limit, &err)
                   : DDB_ENOMEM;
    ddb_cancel_unref(limit);
    const char *pk = o->pk, *sk = o->sk;
    if (rc == 0) {
        pk = info.pk;
        sk = info.sk[0] ? info.sk : NULL;
    }
    char keys[1200], a[520], b[520];
    if (sk)
        snprintf(keys, sizeof keys, "partition key '%s', sort key '%s'",
                 cli_safe_text(pk, a, sizeof a), cli_safe_text(sk, b, sizeof b));
    else
        snprintf(keys, sizeof keys, "partition key '%s', no sort key",
                 cli_safe_text(pk, a, sizeof a));
    char ttl[600] = "";
    if (o->ttl)
        snprintf(ttl, sizeof ttl, "; time to live on '%s'", cli_safe_text(o->ttl, a, sizeof a));
    cli_safe_text(name, safe, sizeof safe);
    if (o->exist_ok)
        printf("table '%s' is ready: %s%s\n", safe, keys, ttl);
    else
        printf("created table '%s': %s; on-demand billing%s\n", safe, keys, ttl);
}

int cli_cmd_table(cli_opts *o)
{
    const char *action = o->args[0];
    const char *name = o->args[1];
    bool create = strcmp(action, "create") == 0;
    if (!create && strcmp(action, "delete") != 0)
        return cli_usage_error(o->command, "unknown action '%s' (create or delete)", action);
    if (!create && (o->ttl || o->exist_ok))
        return cli_usage_error(o->command, "--ttl and --exist-ok apply to 'table create' only");
    /* DynamoDB's rule for a table name, checked before any request. */
    size_t len = strlen(name);
    if (len < 3 || len > 255 || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789_.-") != len)
        return cli_usage_error(o->command,
                               "table name '%s': 3 to 255 characters of a-z, A-Z, 0-9, '_', "
                               "'-' and '.'",
                               name);
    cli_conn c;
    int rc = cli_conn_open(&c, o, false, false);
    if (rc)
        return rc;
    ddb_error err;
    ddb_error_clear(&err);
    char what[512];
    snprintf(what, sizeof what, "cannot %s table '%s'", action, name);
    cli_req req;
    cli_req_begin(&req, create ? "CreateTable" : "DeleteTable", what, true);
    if (create) {
        ddb_key_schema key = {.pk = o->pk, .pk_type = DDB_S, .sk = o->sk, .sk_type = DDB_S};
        ddb_create_table_options co = {.ttl_attribute = o->ttl, .wait_active = true,
                                       .exist_ok = o->exist_ok};
        rc = ddb_client_create_table(c.client, name, &key, &co, cli_stop(), &err);
    } else {
        rc = ddb_client_delete_table(c.client, name, cli_stop(), &err);
    }
    if (rc) {
        rc = cli_req_fail(&req, rc, &err);
    } else {
        cli_req_end(&req);
        say_done(&c, o, create, name);
    }
    cli_conn_close(&c);
    return rc;
}
