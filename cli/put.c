/* put.c: `dynalock put --if-held`, a fenced write from a script: one TransactWriteItems
 * with the item's Put and a ConditionCheck that the lock item still has the owner and
 * fencing token that `run` or `leader` put in the environment. A lease cannot be rebuilt
 * from the environment, so the check is made from the owner and token (ddb_tx_check_lock). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The item file's cap. The item itself is DynamoDB's to judge (400 KB of names and
 * values); its DynamoDB JSON is larger: base64 adds a third to a binary and escapes up to
 * six bytes per byte of a string. No item that DynamoDB accepts needs more than this. */
#define ITEM_MAX ((size_t)4 << 20)

static const char *env_or(const char *given, const char *var)
{
    if (given)
        return given;
    const char *v = getenv(var);
    return v && *v ? v : NULL;
}

/* Reads a file ("-" for stdin) into a malloc'd string. NULL with errno on failure. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(ITEM_MAX + 1);
    size_t n = buf ? fread(buf, 1, ITEM_MAX + 1, f) : 0;
    int failed = !buf || ferror(f);
    if (f != stdin)
        fclose(f);
    if (failed) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    if (n > ITEM_MAX) {
        free(buf);
        errno = EFBIG;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static bool is_token(const char *s)
{
    if (!*s || strlen(s) > 19)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* The read that says who holds the lock after a refusal has this much real time: it is
 * only for the message. */
#define HOLDER_READ_MS 2000

/* Tells who holds the lock now, for the message of a refusal. */
static void describe_holder(ddb_lock_table *locks, const char *name, char *buf, size_t size)
{
    ddb_error err;
    ddb_error_clear(&err);
    ddb_lock_state st;
    cli_req req;
    cli_req_begin(&req, "GetItem", "reading the lock's holder", false);
    ddb_cancel *limit = cli_deadline(HOLDER_READ_MS);
    int rc = limit ? ddb_lock_table_get_state(locks, name, &st, limit, &err) : DDB_ENOMEM;
    ddb_cancel_unref(limit);
    cli_req_end(&req);
    if (rc != 0 && cli_req_unanswered(rc)) {
        char said[128];
        cli_req_describe(&req, said, sizeof said);
        snprintf(buf, size, "who holds it now is not known (DynamoDB %s)", said);
    } else if (rc != 0)
        snprintf(buf, size, "its state could not be read");
    else if (!st.exists)
        snprintf(buf, size, "its item was deleted");
    else if (!st.is_held)
        snprintf(buf, size, "it is free now (fencing token %lld)", (long long)st.fencing_token);
    else if (st.holder_label[0])
        snprintf(buf, size, "'%s' holds it now with fencing token %lld", st.holder_label,
                 (long long)st.fencing_token);
    else
        snprintf(buf, size, "another owner holds it now with fencing token %lld",
                 (long long)st.fencing_token);
}

static int send_put(cli_opts *o, cli_conn *c, ddb_item *item)
{
    ddb_error err;
    ddb_error_clear(&err);
    cli_req req;
    if (!o->if_held) {
        cli_req_begin(&req, "PutItem", "put failed", true);
        int rc = ddb_table_put_item(c->table, item, NULL, NULL, cli_stop(),
                              &err);
        if (rc)
            return cli_req_fail(&req, rc, &err);
        cli_req_end(&req);
        return 0;
    }
    const char *lock = env_or(o->lock, "DYNALOCK_LOCK");
    const char *owner = env_or(o->owner, "DYNALOCK_OWNER");
    const char *token = env_or(o->token, "DYNALOCK_FENCING_TOKEN");
    const char *lock_table = env_or(o->lock_table, "DYNALOCK_TABLE");
    if (!lock_table)
        lock_table = o->table;
    if (!lock || !owner || !token)
        return cli_usage_error(o->command, "--if-held needs a lease: run under 'dynalock run' "
                               "or 'dynalock leader', or give --lock, --owner and --token");
    if (!is_token(token))
        return cli_usage_error(o->command, "invalid fencing token '%s'", token);
    if (ddb_lock_name_check(lock, &err) != 0)
        return cli_usage_error(o->command, "invalid lock name: %s", err.message);

    ddb_table *table = ddb_table_open(c->client, lock_table, o->pk, o->sk, &err);
    ddb_lock_table *locks = table ? ddb_lock_table_new(table, NULL, &err) : NULL;
    ddb_tx *tx = ddb_tx_new(c->client);
    int rc = 0;
    if (!locks)
        rc = err.code ? err.code : DDB_EINVAL;
    else if (!tx)
        rc = DDB_ENOMEM;
    ddb_tx_marker held = {0};
    if (rc == 0)
        rc = ddb_tx_check_lock(tx, locks, lock, owner, strtoll(token, NULL, 10), &held, &err);
    if (rc == 0)
        rc = ddb_tx_put(tx, c->table, item, NULL, NULL, &err);
    cli_req_begin(&req, "TransactWriteItems", "put failed", true);
    if (rc == 0)
        rc = ddb_tx_send(tx, cli_stop(), &err);
    cli_req_end(&req);
    int status = 0;
    if (rc == DDB_ETXCANCELED &&
        ddb_tx_reason_for(tx, held) == DDB_TXFAIL_CONDITIONAL_CHECK_FAILED) {
        char now[DDB_HOLDER_LABEL_MAX_BYTES + 96];
        describe_holder(locks, lock, now, sizeof now);
        cli_error("put refused: the lease on lock '%s' with fencing token %s no longer holds "
                  "it; %s", lock, token, now);
        status = CLI_EXIT_REFUSED;
    } else if (rc != 0) {
        status = cli_req_fail(&req, rc, &err);
    }
    ddb_tx_free(tx);
    ddb_lock_table_free(locks);
    ddb_table_close(table);
    return status;
}

int cli_cmd_put(cli_opts *o)
{
    if (!!o->item_json == !!o->item_file)
        return cli_usage_error(o->command, "give the item with either --item JSON or "
                               "--item-file PATH");
    char *text = NULL;
    size_t len = 0;
    if (o->item_file) {
        text = read_all(o->item_file, &len);
        if (!text) {
            cli_error("cannot read --item-file '%s': %s", o->item_file, strerror(errno));
            return CLI_EXIT_NOINPUT;
        }
    }
    ddb_error err;
    ddb_error_clear(&err);
    ddb_item *item = o->item_file ? ddb_item_from_json(text, len, &err)
                                  : ddb_item_from_json(o->item_json, strlen(o->item_json), &err);
    free(text);
    if (!item)
        return cli_usage_error(o->command, "invalid item (%s): %s",
                               o->item_file ? "--item-file" : "--item",
                               err.message[0] ? err.message : "not DynamoDB JSON");
    cli_conn c;
    int rc = cli_conn_open(&c, o, true, false);
    if (rc == 0) {
        rc = send_put(o, &c, item);
        cli_conn_close(&c);
    }
    ddb_item_free(item);
    return rc;
}
