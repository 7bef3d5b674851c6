/* env.c: where `dynalock` meets its surroundings: the AWS conventions for the endpoint,
 * region and profile (the client resolves credentials itself), the DYNALOCK_* variables
 * that `run` and `leader` hand to CMD, the client, table and lock table the options
 * describe, and the mapping of library errors to exit statuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#ifdef DYNALOCK_CLI_OTEL
#include <dynalock/otel.h>
#endif

extern char **environ;

const char *cli_endpoint(const cli_opts *o)
{
    if (o->endpoint && *o->endpoint)
        return o->endpoint;
    static const char *const vars[] = {"DYNALOCK_ENDPOINT", "AWS_ENDPOINT_URL_DYNAMODB",
                                       "AWS_ENDPOINT_URL"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return v;
    }
    return NULL;
}

int cli_exit_for(int rc)
{
    switch (rc) {
    case DDB_OK: return CLI_EXIT_OK;
    case DDB_EINVAL: return CLI_EXIT_USAGE;
    case DDB_ETIMEDOUT:
    case DDB_ENETWORK:
    case DDB_ESERVICE:
    case DDB_ECONDITION:
    case DDB_ETXCANCELED:
    case DDB_ENOTFOUND:
    case DDB_ETHROTTLED:
    case DDB_EACCESS:
    case DDB_EINUSE:
        return CLI_EXIT_UNAVAILABLE;
    case DDB_EVALIDATION:
    case DDB_ESTATE:
        return CLI_EXIT_DATAERR;
    case DDB_ECREDENTIALS: return CLI_EXIT_CONFIG;
    case DDB_EIO: return CLI_EXIT_IOERR;
    case DDB_ELOST: return CLI_EXIT_LOST;
    case DDB_EINDOUBT: return CLI_EXIT_UNKNOWN;
    default: return CLI_EXIT_SOFTWARE;
    }
}

#ifdef DYNALOCK_CLI_OTEL
/* How long the exporter's last flush may hold the command's exit. */
#define OTEL_EXIT_FLUSH_MS 3000

/* The OTLP exporter, when one of the OTEL_EXPORTER_OTLP_*ENDPOINT variables is set (and
 * OTEL_SDK_DISABLED is not true): everything else from the OTEL_* variables, the command's
 * clock, service.name "dynalock" unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say.
 * A TRACEPARENT in the environment makes the command's spans part of that trace. A bad
 * setting is logged and the command runs without exporting. */
static ddb_otel *otel_open(cli_conn *c)
{
    const char *vars[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                          "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"};
    bool any = false;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        any |= getenv(vars[i]) && *getenv(vars[i]);
    const char *off = getenv("OTEL_SDK_DISABLED");
    if (!any || (off && strcasecmp(off, "true") == 0))
        return NULL;
    const char *svc = getenv("OTEL_SERVICE_NAME");
    const char *ra = getenv("OTEL_RESOURCE_ATTRIBUTES");
    bool named = (svc && *svc) || (ra && strstr(ra, "service.name="));
    ddb_error err;
    ddb_otel *otel = ddb_otel_new(&(ddb_otel_options){
        .service_name = named ? NULL : "dynalock", .clock = c->clock,
        .shutdown_timeout_ms = OTEL_EXIT_FLUSH_MS}, &err);
    if (!otel) {
        ddb_log_field f[] = {{"error", err.message}};
        cli_log(c, DDB_LOG_WARN, "OpenTelemetry export off: a bad OTEL_* setting", f, 1);
        return NULL;
    }
    const char *tp = getenv("TRACEPARENT");
    if (tp && *tp && ddb_otel_set_remote_parent(otel, tp, &err) != 0) {
        ddb_log_field f[] = {{"traceparent", tp}};
        cli_log(c, DDB_LOG_WARN, "TRACEPARENT is not a W3C traceparent; ignored", f, 1);
    }
    return otel;
}

uint64_t cli_span_start(cli_conn *c, const char *name)
{
    return c->otel ? ddb_otel_span_start(c->otel, name) : 0;
}

void cli_span_end(cli_conn *c, uint64_t span, int exit_code, const char *error_type)
{
    if (!c->otel || !span)
        return;
    if (exit_code >= 0)
        ddb_otel_span_attr(c->otel, span, &(ddb_attr){.key = "process.exit.code",
                                                       .type = DDB_ATTR_INT, .v.i = exit_code});
    ddb_otel_span_end(c->otel, span, error_type);
}

#else
/* Built without libddb_otel: the command exports nothing. */
static struct ddb_otel *otel_open(cli_conn *c)
{
    (void)c;
    return NULL;
}

uint64_t cli_span_start(cli_conn *c, const char *name)
{
    (void)c;
    (void)name;
    return 0;
}

void cli_span_end(cli_conn *c, uint64_t span, int exit_code, const char *error_type)
{
    (void)c;
    (void)span;
    (void)exit_code;
    (void)error_type;
}
#endif

/* The region of the command's client, for its error messages (static storage). */
static char cli_region[64];
/* The open connection and its options, for the hints of cli_fail; NULL when none. */
static cli_conn *hint_conn;
static const cli_opts *hint_opts;

/* A second line after a failure whose fix the user can make: a table that does not
 * exist (how to create it), a lock table whose key schema is not the one the options
 * name (which key it has: one DescribeTable, bounded, only on that failure). */
static void fail_hint(int rc, const ddb_error *err)
{
    if (!hint_conn || !hint_opts || !hint_opts->table || !err)
        return;
    const cli_opts *o = hint_opts;
    /* `table` has its own words for it; a `put` with a --lock-table may miss either. */
    bool skip = (o->command && strcmp(o->command->name, "table") == 0) ||
                (o->lock_table && strcmp(o->lock_table, o->table) != 0);
    if (rc == DDB_ENOTFOUND && strcmp(err->aws_type, "ResourceNotFoundException") == 0 &&
        !skip) {
        char keys[600] = "";
        if (strcmp(o->pk, "pk") != 0)
            snprintf(keys, sizeof keys, " --pk %s", o->pk);
        if (o->sk)
            snprintf(keys + strlen(keys), sizeof keys - strlen(keys), " --sk %s", o->sk);
        cli_error("no table '%s' in region %s: create it with 'dynalock table create%s %s'",
                  o->table, cli_region[0] ? cli_region : "(default)", keys, o->table);
        return;
    }
    if (rc != DDB_EVALIDATION || !strstr(err->message, "must be strings") ||
        !hint_conn->client)
        return;
    ddb_table_info info;
    ddb_error derr;
    ddb_error_clear(&derr);
    ddb_cancel *limit = cli_deadline(1000);
    int drc = limit ? ddb_client_describe_table(hint_conn->client, o->table, &info, limit, &derr)
                    : DDB_ENOMEM;
    ddb_cancel_unref(limit);
    if (drc != 0)
        return;
    if (strcmp(info.pk, o->pk) != 0)
        cli_error("table '%s' has the partition key '%s', not '%s': give --pk %s (or set "
                  "DYNALOCK_PK)", o->table, info.pk, o->pk, info.pk);
    else if (info.sk[0] && !o->sk)
        cli_error("table '%s' has the sort key '%s': give --sk %s (or set DYNALOCK_SK)",
                  o->table, info.sk, info.sk);
    else if (!info.sk[0] && o->sk)
        cli_error("table '%s' has no sort key: leave out --sk %s (and DYNALOCK_SK)", o->table,
                  o->sk);
    else if (info.sk[0] && strcmp(info.sk, o->sk) != 0)
        cli_error("table '%s' has the sort key '%s', not '%s': give --sk %s", o->table,
                  info.sk, o->sk, info.sk);
    else if (info.pk_type != DDB_S || (info.sk[0] && info.sk_type != DDB_S))
        cli_error("table '%s' has a key attribute that is not a string: a lock table needs "
                  "string keys ('dynalock table create' makes one)", o->table);
}

int cli_fail(const char *what, int rc, const ddb_error *err)
{
    const char *msg = err && err->message[0] ? err->message : ddb_error_string(rc);
    /* What an operator needs to look the failure up with AWS: the error's type, the
     * request id of the answer, and the region it went to. */
    char detail[256] = "";
    size_t n = 0;
    if (err && err->aws_type[0] && !strstr(msg, err->aws_type))
        n += (size_t)snprintf(detail + n, sizeof detail - n, "%s", err->aws_type);
    if (err && err->request_id[0] && n < sizeof detail)
        n += (size_t)snprintf(detail + n, sizeof detail - n, "%srequest id %s", n ? "; " : "",
                              err->request_id);
    if (err && err->http_status && cli_region[0] && n < sizeof detail)
        n += (size_t)snprintf(detail + n, sizeof detail - n, "%sregion %s", n ? "; " : "",
                              cli_region);
    if (n)
        cli_error("%s: %s (%s)", what, msg, detail);
    else
        cli_error("%s: %s", what, msg);
    fail_hint(rc, err);
    if (rc == DDB_EINDOUBT)
        cli_error("%s: the write may or may not have been applied; look before trying again "
                  "('dynalock state NAME' shows a lock's holder and fencing token)", what);
    if (rc == DDB_EINVAL && cli_current) /* a bad argument that the library caught */
        fprintf(stderr, "usage: %s %s\n", cli_progname, cli_current->usage);
    return cli_exit_for(rc);
}

int cli_conn_open(cli_conn *c, cli_opts *o, bool need_table, bool need_locks)
{
    memset(c, 0, sizeof *c);
    c->exit_code = -1; /* unknown until the subcommand sets it (run) */
    c->log.format = (ddb_log_format)o->log_format;
    c->log_level = o->log_level;
    ddb_error err;
    ddb_error_clear(&err);
    const char *endpoint = cli_endpoint(o);
    if (need_table && !o->table)
        return cli_usage_error(o->command, "no table: give --table NAME or set DYNALOCK_TABLE");
    if (o->server_clock) {
        if (!endpoint)
            return cli_usage_error(o->command, "--clock server needs the fake server's "
                                   "endpoint: give --endpoint URL or set "
                                   "AWS_ENDPOINT_URL_DYNAMODB");
        c->clock = ddb_clock_new_server(endpoint, &err);
        if (!c->clock)
            return cli_fail("cannot follow the server's clock", err.code ? err.code
                                                                       : DDB_ENETWORK, &err);
        /* The log's `ts` is the time the leases use: the library's lines and the
         * command's own go through the same sink. */
        c->log.clock = c->clock;
    }
    c->otel = otel_open(c);
    ddb_client_options co = {
        .endpoint = endpoint,
        .region = o->region,
        .profile = o->profile,
        .clock = c->clock,
        .log = ddb_log_to_stderr_with,
        .log_arg = &c->log,
        .log_level = o->log_level,
#ifdef DYNALOCK_CLI_OTEL
        .telemetry = c->otel ? ddb_otel_telemetry(c->otel) : NULL,
#endif
    };
    c->client = ddb_client_new(&co, &err);
    if (c->client)
        snprintf(cli_region, sizeof cli_region, "%s", ddb_client_region(c->client));
    if (!c->client) {
        int rc = cli_fail("cannot create the DynamoDB client", err.code ? err.code : DDB_EINVAL,
                          &err);
        cli_conn_close(c);
        return rc;
    }
    if (need_table) {
        c->table = ddb_table_open(c->client, o->table, o->pk, o->sk, &err);
        if (!c->table) {
            int rc = cli_fail("cannot open the table", err.code ? err.code : DDB_EINVAL, &err);
            cli_conn_close(c);
            return rc;
        }
    }
    /* The command's span: its requests and lock operations are its children, and CMD's
     * TRACEPARENT names it. `leader` has one per round of the election instead. */
    if (c->otel && strcmp(o->command->name, "leader") != 0) {
        char name[64];
        snprintf(name, sizeof name, "dynalock %s", o->command->name);
        c->span = cli_span_start(c, name);
    }
    hint_conn = c;
    hint_opts = o;
    if (need_locks) {
        ddb_lock_table_options lo = {.holder_label = o->label,
                                     .list_index = o->list_index,
                                     .lease_value = o->value};
        c->locks = ddb_lock_table_new(c->table, &lo, &err);
        if (!c->locks) {
            int rc = cli_fail("cannot open the lock table", err.code ? err.code : DDB_EINVAL,
                              &err);
            cli_conn_close(c);
            return rc;
        }
    }
    return 0;
}

void cli_conn_close(cli_conn *c)
{
    if (hint_conn == c) {
        hint_conn = NULL;
        hint_opts = NULL;
    }
    cli_span_end(c, c->span, c->exit_code, NULL);
    ddb_lock_table_free(c->locks);
    ddb_table_close(c->table);
    ddb_client_free(c->client);
#ifdef DYNALOCK_CLI_OTEL
    ddb_otel_free(c->otel); /* the last export, bounded by OTEL_EXIT_FLUSH_MS */
#endif
    ddb_clock_unref(c->clock);
    memset(c, 0, sizeof *c);
}

void cli_log(cli_conn *c, int level, const char *message, const ddb_log_field *fields,
             size_t n)
{
    /* The command's records go to the sink and the level it gave its client. */
    if (level >= c->log_level && level < DDB_LOG_OFF)
        ddb_log_to_stderr_with(&c->log, level, 0, "dynalock", message, fields, n);
}

/* ------------------------------------------------------ the environment of CMD */

int cli_env_init(cli_env *e)
{
    memset(e, 0, sizeof *e);
    size_t n = 0;
    while (environ && environ[n])
        n++;
    e->cap = n + 16;
    e->vars = calloc(e->cap, sizeof *e->vars);
    if (!e->vars)
        return -1;
    for (size_t i = 0; i < n; i++) {
        e->vars[i] = strdup(environ[i]);
        if (!e->vars[i]) {
            cli_env_cleanup(e);
            return -1;
        }
        e->n++;
    }
    return 0;
}

int cli_env_set(cli_env *e, const char *name, const char *value)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < e->n; i++) {
        if (strncmp(e->vars[i], name, len) == 0 && e->vars[i][len] == '=') {
            free(e->vars[i]);
            e->vars[i] = e->vars[--e->n];
            e->vars[e->n] = NULL;
            break;
        }
    }
    if (!value)
        return 0;
    if (e->n + 1 >= e->cap) {
        char **more = realloc(e->vars, (e->cap * 2) * sizeof *more);
        if (!more)
            return -1;
        e->vars = more;
        e->cap *= 2;
    }
    size_t size = len + strlen(value) + 2;
    char *var = malloc(size);
    if (!var)
        return -1;
    snprintf(var, size, "%s=%s", name, value);
    e->vars[e->n++] = var;
    e->vars[e->n] = NULL;
    return 0;
}

void cli_env_cleanup(cli_env *e)
{
    if (!e->vars)
        return;
    for (size_t i = 0; i < e->n; i++)
        free(e->vars[i]);
    free(e->vars);
    memset(e, 0, sizeof *e);
}

int cli_env_for_lease(cli_env *e, const cli_opts *o, cli_conn *c, ddb_lease *lease)
{
    char token[32];
    snprintf(token, sizeof token, "%lld", (long long)ddb_lease_fencing_token(lease));
    const char *endpoint = ddb_client_endpoint(c->client);
    const char *region = ddb_client_region(c->client);
    int rc = 0;
    rc |= cli_env_set(e, "DYNALOCK_LOCK", ddb_lease_name(lease));
    rc |= cli_env_set(e, "DYNALOCK_FENCING_TOKEN", token);
    /* A slot's lease (run --slots): its number; otherwise none, not an outer run's. */
    int slot = -1;
    char slot_text[16];
    if (ddb_lock_slot_parse(ddb_lease_name(lease), NULL, &slot))
        snprintf(slot_text, sizeof slot_text, "%d", slot);
    rc |= cli_env_set(e, "DYNALOCK_SLOT", slot >= 0 ? slot_text : NULL);
    rc |= cli_env_set(e, "DYNALOCK_OWNER", ddb_lease_owner(lease));
    rc |= cli_env_set(e, "DYNALOCK_TABLE", o->table);
    rc |= cli_env_set(e, "DYNALOCK_PK", o->pk);
    rc |= cli_env_set(e, "DYNALOCK_SK", o->sk);
    rc |= cli_env_set(e, "DYNALOCK_ENDPOINT", endpoint && *endpoint ? endpoint : NULL);
    rc |= cli_env_set(e, "DYNALOCK_REGION", region && *region ? region : NULL);
    /* CMD's work joins the trace of the lease: the command's current span. Without an
     * exporter, a TRACEPARENT of dynalock's environment passes on as it is. */
#ifdef DYNALOCK_CLI_OTEL
    char tp[DDB_OTEL_TRACEPARENT_SIZE];
    if (c->otel && ddb_otel_traceparent(c->otel, 0, tp) == 0)
        rc |= cli_env_set(e, "TRACEPARENT", tp);
#endif
    return rc ? -1 : 0;
}
