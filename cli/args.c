/* args.c: the command line of `dynalock`: long options (--name VALUE or --name=VALUE),
 * positional arguments, the command after NAME, and durations such as "30s". Every bad
 * argument ends in one usage line that names it, and exit status 64. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum opt_id {
    O_TABLE, O_PK, O_SK, O_ENDPOINT, O_REGION, O_PROFILE, O_LOG_LEVEL, O_LOG_FORMAT,
    O_CLOCK, O_LEASE, O_LABEL, O_JSON, O_WAIT, O_KILL_AFTER, O_PAUSE, O_ONCE, O_IF_HELD,
    O_ITEM, O_ITEM_FILE, O_LOCK_TABLE, O_LOCK, O_OWNER, O_TOKEN, O_TTL, O_EXIST_OK, O_INDEX,
    O_IF_TOKEN, O_VALUE, O_FOR, O_COUNT, O_CONFLICT_EXIT, O_VERBOSE,
    O_SLOTS, O_HELP,
};

typedef struct opt_def {
    const char *name;
    enum opt_id id;
    unsigned group;   /* the CLI_OPT_* bit that a subcommand must have; 0 = every one */
    bool has_value;
} opt_def;

static const opt_def OPTS[] = {
    {"table", O_TABLE, CLI_OPT_COMMON, true},
    {"pk", O_PK, CLI_OPT_COMMON, true},
    {"sk", O_SK, CLI_OPT_COMMON, true},
    {"endpoint", O_ENDPOINT, CLI_OPT_COMMON, true},
    {"region", O_REGION, CLI_OPT_COMMON, true},
    {"profile", O_PROFILE, CLI_OPT_COMMON, true},
    {"log-level", O_LOG_LEVEL, CLI_OPT_COMMON, true},
    {"log-format", O_LOG_FORMAT, CLI_OPT_COMMON, true},
    {"clock", O_CLOCK, CLI_OPT_COMMON, true},
    {"lease", O_LEASE, CLI_OPT_LEASE, true},
    {"label", O_LABEL, CLI_OPT_LABEL, true},
    {"json", O_JSON, CLI_OPT_JSON, false},
    {"wait", O_WAIT, CLI_OPT_WAIT, true},
    {"conflict-exit-code", O_CONFLICT_EXIT, CLI_OPT_WAIT, true},
    {"verbose", O_VERBOSE, CLI_OPT_WAIT, false},
    {"kill-after", O_KILL_AFTER, CLI_OPT_KILL_AFTER, true},
    {"pause", O_PAUSE, CLI_OPT_PAUSE, true},
    {"once", O_ONCE, CLI_OPT_PAUSE, false},
    {"if-held", O_IF_HELD, CLI_OPT_PUT, false},
    {"item", O_ITEM, CLI_OPT_PUT, true},
    {"item-file", O_ITEM_FILE, CLI_OPT_PUT, true},
    {"lock-table", O_LOCK_TABLE, CLI_OPT_PUT, true},
    {"lock", O_LOCK, CLI_OPT_PUT, true},
    {"owner", O_OWNER, CLI_OPT_PUT | CLI_OPT_RELEASE, true},
    {"if-token", O_IF_TOKEN, CLI_OPT_RELEASE, true},
    {"token", O_TOKEN, CLI_OPT_PUT, true},
    {"ttl", O_TTL, CLI_OPT_TABLE_CREATE, true},
    {"exist-ok", O_EXIST_OK, CLI_OPT_TABLE_CREATE, false},
    {"index", O_INDEX, CLI_OPT_INDEX, true},
    {"value", O_VALUE, CLI_OPT_VALUE, true},
    {"for", O_FOR, CLI_OPT_FOR, true},
    {"count", O_COUNT, CLI_OPT_COUNT, true},
    {"slots", O_SLOTS, CLI_OPT_SLOTS, true},
    {"help", O_HELP, 0, false},
};

const char *cli_progname = "dynalock";
const cli_command *cli_current;

void cli_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Messages quote lock names, labels and DynamoDB's text: no control character of
     * theirs reaches the terminal. */
    char safe[4 * sizeof msg];
    fprintf(stderr, "%s: %s\n", cli_progname, cli_safe_text(msg, safe, sizeof safe));
}

int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char safe[4 * sizeof msg];
    cli_safe_text(msg, safe, sizeof safe);
    if (cmd)
        fprintf(stderr, "%s %s: %s\nusage: %s %s\n", cli_progname, cmd->name, safe,
                cli_progname, cmd->usage);
    else
        fprintf(stderr, "%s: %s\nusage: %s COMMAND [OPTIONS] [ARGS] (see %s --help)\n",
                cli_progname, safe, cli_progname, cli_progname);
    return CLI_EXIT_USAGE;
}

/* ----------------------------------------------------------------- durations */

int cli_parse_duration(const char *text, int64_t *out_ms)
{
    if (!text || !*text)
        return -1;
    if (strcmp(text, "forever") == 0 || strcmp(text, "infinity") == 0) {
        *out_ms = -1;
        return 0;
    }
    /* digits [. digits] [unit], with at most 3 fraction digits counted */
    const char *p = text;
    int64_t whole = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        if (whole > (INT64_C(1) << 40))
            return -1;
        whole = whole * 10 + (*p - '0');
        p++;
        digits++;
    }
    int64_t frac = 0; /* in thousandths */
    int frac_digits = 0;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (frac_digits < 3) {
                frac = frac * 10 + (*p - '0');
                frac_digits++;
            } else if (*p != '0') {
                return -1; /* finer than a millisecond of a second */
            }
            p++;
            digits++;
        }
        if (frac_digits == 0)
            return -1;
        while (frac_digits < 3) {
            frac *= 10;
            frac_digits++;
        }
    }
    if (digits == 0)
        return -1;
    int64_t unit_ms;
    if (strcmp(p, "ms") == 0)
        unit_ms = 1;
    else if (strcmp(p, "s") == 0 || *p == '\0')
        unit_ms = 1000;
    else if (strcmp(p, "m") == 0)
        unit_ms = 60000;
    else if (strcmp(p, "h") == 0)
        unit_ms = 3600000;
    else if (strcmp(p, "d") == 0)
        unit_ms = 86400000;
    else
        return -1;
    if (unit_ms == 1 && frac != 0)
        return -1; /* "1.5ms" */
    /* The range first: "10995116277769d" would overflow the product. */
    if (whole > INT64_C(10) * 365 * 86400000 / unit_ms)
        return -1;
    int64_t ms = whole * unit_ms + frac * unit_ms / 1000;
    *out_ms = ms;
    return 0;
}

void cli_format_duration(int64_t ms, char *buf, size_t size)
{
    if (ms < 0) {
        snprintf(buf, size, "forever");
    } else if (ms % 1000 != 0 || ms == 0) {
        snprintf(buf, size, "%lldms", (long long)ms);
    } else if (ms % 3600000 == 0) {
        snprintf(buf, size, "%lldh", (long long)(ms / 3600000));
    } else if (ms % 60000 == 0) {
        snprintf(buf, size, "%lldm", (long long)(ms / 60000));
    } else if (ms > 60000) {
        snprintf(buf, size, "%lldm%llds", (long long)(ms / 60000),
                 (long long)(ms % 60000 / 1000));
    } else {
        snprintf(buf, size, "%llds", (long long)(ms / 1000));
    }
}

/* ------------------------------------------------------------------- options */

static int parse_log_level(const char *v)
{
    static const struct { const char *name; int level; } levels[] = {
        {"trace", DDB_LOG_TRACE}, {"debug", DDB_LOG_DEBUG}, {"info", DDB_LOG_INFO},
        {"warn", DDB_LOG_WARN}, {"warning", DDB_LOG_WARN}, {"error", DDB_LOG_ERROR},
        {"off", DDB_LOG_OFF}, {"none", DDB_LOG_OFF},
    };
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (strcmp(v, levels[i].name) == 0)
            return levels[i].level;
    return 0;
}

static int duration_option(const cli_command *cmd, const char *name, const char *v,
                           bool forever_ok, int64_t *out)
{
    if (cli_parse_duration(v, out) != 0 || (*out < 0 && !forever_ok))
        return cli_usage_error(cmd, "invalid duration '%s' for --%s (use e.g. 30s, 500ms, 2m, 1h)",
                               v, name);
    return 0;
}

/* --conflict-exit-code N (flock -E): 1 to 255, and not a status of dynalock's own that
 * means something else (64-79 but 75 itself, 126, 127, 128+N), so that a conflict cannot
 * pass for a lost lease or a signal. CMD's statuses cannot be told from it: that is for
 * the caller to choose, and docs/cli.md says so. */
static int conflict_exit_option(const cli_command *cmd, const char *v, int *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!(*v >= '0' && *v <= '9') || *end || errno || n < 1 || n > 255)
        return cli_usage_error(cmd, "invalid --conflict-exit-code '%s' (1 to 255)", v);
    const char *taken = NULL;
    if (n >= 64 && n <= 79 && n != CLI_EXIT_NOT_ACQUIRED)
        taken = "dynalock's own statuses (64-79)";
    else if (n == CLI_EXIT_CANNOT_EXEC || n == CLI_EXIT_NOT_FOUND)
        taken = "the statuses of a CMD that cannot run (126, 127)";
    else if (n >= 128)
        taken = "the statuses of signals (128+N)";
    if (taken)
        return cli_usage_error(cmd, "--conflict-exit-code %ld is one of %s: choose 1-63, "
                               "75 or 80-125", n, taken);
    *out = (int)n;
    return 0;
}

static int set_option(const cli_command *cmd, const opt_def *d, const char *v, cli_opts *o)
{
    switch (d->id) {
    case O_TABLE: o->table = v; break;
    case O_PK: o->pk = v; break;
    case O_SK: o->sk = v; break;
    case O_ENDPOINT: o->endpoint = v; break;
    case O_REGION: o->region = v; break;
    case O_PROFILE: o->profile = v; break;
    case O_LOG_LEVEL:
        o->log_level = parse_log_level(v);
        if (!o->log_level)
            return cli_usage_error(cmd, "invalid --log-level '%s' (trace, debug, info, warn, error, off)", v);
        break;
    case O_LOG_FORMAT:
        if (strcmp(v, "text") == 0 || strcmp(v, "logfmt") == 0)
            o->log_format = DDB_LOG_LOGFMT;
        else if (strcmp(v, "json") == 0)
            o->log_format = DDB_LOG_JSON;
        else
            return cli_usage_error(cmd, "invalid --log-format '%s' (text or json)", v);
        break;
    case O_CLOCK:
        if (strcmp(v, "system") == 0)
            o->server_clock = false;
        else if (strcmp(v, "server") == 0)
            o->server_clock = true;
        else
            return cli_usage_error(cmd, "invalid --clock '%s' (system or server)", v);
        break;
    case O_LEASE: {
        int rc = duration_option(cmd, d->name, v, false, &o->lease_ms);
        if (rc)
            return rc;
        if (o->lease_ms < DDB_LEASE_MIN_MS || o->lease_ms > DDB_LEASE_MAX_MS)
            return cli_usage_error(cmd, "--lease '%s' is out of range (1s to 24h)", v);
        break;
    }
    case O_LABEL:
        if (!*v || cli_text_chars(v) > DDB_HOLDER_LABEL_MAX)
            return cli_usage_error(cmd, "--label must have 1 to %d characters",
                                   DDB_HOLDER_LABEL_MAX);
        o->label = v;
        o->label_given = true;
        break;
    case O_JSON: o->json = true; break;
    case O_WAIT: return duration_option(cmd, d->name, v, true, &o->wait_ms);
    case O_VERBOSE: o->verbose = true; break;
    case O_CONFLICT_EXIT: return conflict_exit_option(cmd, v, &o->conflict_exit);
    case O_KILL_AFTER: return duration_option(cmd, d->name, v, false, &o->kill_after_ms);
    case O_PAUSE: return duration_option(cmd, d->name, v, false, &o->pause_ms);
    case O_ONCE: o->once = true; break;
    case O_IF_HELD: o->if_held = true; break;
    case O_ITEM: o->item_json = v; break;
    case O_ITEM_FILE: o->item_file = v; break;
    case O_LOCK_TABLE: o->lock_table = v; break;
    case O_LOCK: o->lock = v; break;
    case O_OWNER: o->owner = v; break;
    case O_TOKEN: o->token = v; break;
    case O_TTL: o->ttl = v; break;
    case O_EXIST_OK: o->exist_ok = true; break;
    case O_INDEX: o->list_index = v; break;
    case O_IF_TOKEN: {
        char *end;
        errno = 0;
        long long t = strtoll(v, &end, 10);
        if (!(*v >= '0' && *v <= '9') || *end || errno || t < 1)
            return cli_usage_error(cmd, "invalid --if-token '%s' (a fencing token: 1 or more)",
                                   v);
        o->if_token = t;
        break;
    }
    case O_VALUE: {
        size_t n = strlen(v);
        if (n < 1 || n > DDB_LEASE_VALUE_MAX_BYTES)
            return cli_usage_error(cmd, "--value must have 1 to %d bytes",
                                   DDB_LEASE_VALUE_MAX_BYTES);
        if (!cli_utf8_valid(v))
            return cli_usage_error(cmd, "--value is not valid UTF-8");
        o->value = v;
        break;
    }
    case O_FOR: return duration_option(cmd, d->name, v, true, &o->for_ms);
    case O_COUNT: {
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (!(*v >= '0' && *v <= '9') || *end || errno || n < 1)
            return cli_usage_error(cmd, "invalid --count '%s' (1 or more)", v);
        o->count = n;
        break;
    }
    case O_SLOTS: {
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (!(*v >= '0' && *v <= '9') || *end || errno || n < 1 || n > DDB_LOCK_SLOTS_MAX)
            return cli_usage_error(cmd, "invalid --slots '%s' (1 to %d)", v, DDB_LOCK_SLOTS_MAX);
        o->slots = (int)n;
        break;
    }
    case O_HELP: break;
    }
    return 0;
}

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

#define MAX_ARGS 8

int cli_parse_args(const cli_command *cmd, int argc, char **argv, cli_opts *o)
{
    static char *args[MAX_ARGS];
    memset(o, 0, sizeof *o);
    o->command = cmd;
    cli_current = cmd;
    o->lease_ms = 30000;
    o->wait_ms = -1;
    o->conflict_exit = CLI_EXIT_NOT_ACQUIRED;
    o->kill_after_ms = 10000;
    o->pause_ms = -1;
    o->log_level = DDB_LOG_WARN;
    o->args = args;
    bool positional_only = false;
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        bool is_cmd = (cmd->options & CLI_OPT_CMD) != 0;
        if (!positional_only && strcmp(a, "--") == 0) {
            if (is_cmd) {
                if (o->n_args == 0)
                    return cli_usage_error(cmd, "missing NAME before '--'");
                o->cmd = argv + i + 1;
                o->n_cmd = argc - i - 1;
                break;
            }
            positional_only = true;
            continue;
        }
        if (!positional_only && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            printf("usage: %s %s\n\n%s", cli_progname, cmd->usage, cmd->help);
            return -1;
        }
        if (!positional_only && a[0] == '-' && a[1] == '-') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            const opt_def *d = NULL;
            for (size_t k = 0; k < sizeof OPTS / sizeof OPTS[0]; k++)
                if (strlen(OPTS[k].name) == len && strncmp(OPTS[k].name, name, len) == 0)
                    d = &OPTS[k];
            if (!d)
                return cli_usage_error(cmd, "unknown option '--%.*s'", (int)len, name);
            if (d->group && !(cmd->options & d->group))
                return cli_usage_error(cmd, "option '--%s' does not apply to '%s'", d->name,
                                       cmd->name);
            const char *value = NULL;
            if (d->has_value) {
                if (eq) {
                    value = eq + 1;
                } else if (i + 1 < argc) {
                    value = argv[++i];
                } else {
                    return cli_usage_error(cmd, "option '--%s' needs a value", d->name);
                }
            } else if (eq) {
                return cli_usage_error(cmd, "option '--%s' takes no value", d->name);
            }
            int rc = set_option(cmd, d, value, o);
            if (rc)
                return rc;
            continue;
        }
        if (!positional_only && a[0] == '-' && a[1] != '\0')
            return cli_usage_error(cmd, "unknown option '%s'", a);
        if (is_cmd && o->n_args == 1) {
            o->cmd = argv + i;
            o->n_cmd = argc - i;
            break;
        }
        if (o->n_args >= cmd->max_args || o->n_args >= MAX_ARGS)
            return cli_usage_error(cmd, "unexpected argument '%s'", a);
        args[o->n_args++] = a;
    }
    if (o->n_args < cmd->min_args)
        return cli_usage_error(cmd, "'%s' needs %d argument%s%s, got %d", cmd->name,
                               cmd->min_args, cmd->min_args == 1 ? "" : "s",
                               (cmd->options & CLI_OPT_CMD) ? " before CMD" : "", o->n_args);
    if ((cmd->options & CLI_OPT_CMD) && o->n_cmd == 0)
        return cli_usage_error(cmd, "missing CMD to run");
    for (int k = 0; k < o->n_args; k++)
        if (!*o->args[k])
            return cli_usage_error(cmd, "empty argument");
    /* A lock name the library would refuse is a usage error before any request. */
    if ((cmd->options & CLI_OPT_LOCK_NAME) && o->n_args > 0) {
        ddb_error nerr;
        ddb_error_clear(&nerr);
        const char *name = o->args[o->n_args - 1];
        if (ddb_lock_name_check(name, &nerr) != 0)
            return cli_usage_error(cmd, "invalid lock name '%s': %s", name, nerr.message);
        /* NAME#slotK is slot K's lock: taken with --slots only, read by name as any. */
        char slot[DDB_LOCK_NAME_SIZE];
        if (o->slots && ddb_lock_slot_name(name, o->slots - 1, slot, sizeof slot, &nerr) != 0)
            return cli_usage_error(cmd, "invalid lock name '%s' for --slots %d: %s", name,
                                   o->slots, nerr.message);
        if ((cmd->options & CLI_OPT_CMD) && !o->slots && ddb_lock_slot_parse(name, NULL, NULL))
            return cli_usage_error(cmd, "invalid lock name '%s': a name ending in "
                                   DDB_LOCK_SLOT_SUFFIX "N is a slot's; use --slots", name);
    }

    if (o->slots && o->for_ms)
        return cli_usage_error(cmd, "--for does not apply with --slots");

    /* Defaults from the environment that `run` and `leader` hand to CMD. */
    if (!o->table)
        o->table = env_or("DYNALOCK_TABLE", NULL);
    if (!o->pk)
        o->pk = env_or("DYNALOCK_PK", "pk");
    if (!o->sk)
        o->sk = env_or("DYNALOCK_SK", NULL);
    if (o->sk && !*o->sk)
        o->sk = NULL;
    if (!o->region)
        o->region = env_or("DYNALOCK_REGION", NULL);
    if (!*o->pk)
        return cli_usage_error(cmd, "--pk must not be empty");
    if (!o->label_given) {
        if (gethostname(o->hostname, sizeof o->hostname - 1) == 0 && o->hostname[0])
            o->label = o->hostname;
    }
    return 0;
}
