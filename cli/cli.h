/* cli.h: what the modules of the `dynalock` command share: exit statuses, the parsed
 * options, the connection to DynamoDB, child processes and signals. Each subcommand lives
 * in a module of its own (run.c, leader.c, put.c, state.c, simulate.c, table.c). */
#ifndef DYNALOCK_CLI_H
#define DYNALOCK_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <dynalock/coord.h>
#include <dynalock/ddb.h>

/* Exit statuses. 64-78 follow sysexits(3), except 76 and 77, which dynalock gives its
 * own meanings next to 75 (the three outcomes of a lock). 79, just past sysexits' range,
 * is the fourth outcome of a write: unknown. It is not 75 (EX_TEMPFAIL): `run` passes
 * CMD's status on, so a `put` inside `run` that said 75 would read as "not acquired".
 * 126/127 and 128+N follow the shells. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_USAGE = 64,       /* a bad argument or option */
    CLI_EXIT_DATAERR = 65,     /* bad input data: an item DynamoDB refused, a non-lock item */
    CLI_EXIT_NOINPUT = 66,     /* an --item-file that cannot be read */
    CLI_EXIT_UNAVAILABLE = 69, /* DynamoDB unreachable or answered with an error */
    CLI_EXIT_SOFTWARE = 70,    /* an internal error, an answer not understood */
    CLI_EXIT_OSERR = 71,       /* a system call failed (fork, pipe) */
    CLI_EXIT_IOERR = 74,       /* a local file failed */
    CLI_EXIT_NOT_ACQUIRED = 75,/* EX_TEMPFAIL: the lock is held by another process */
    CLI_EXIT_LOST = 76,        /* the lease was lost while CMD ran; CMD was stopped */
    CLI_EXIT_REFUSED = 77,     /* put --if-held: the lease no longer holds the lock;
                                  release --if-token: the holder shown holds it no more */
    CLI_EXIT_CONFIG = 78,      /* no credentials, or a configuration that cannot work */
    CLI_EXIT_UNKNOWN = 79,     /* a write cut short without an answer: may or may not be
                                  applied (interrupted, or DynamoDB did not answer) */
    CLI_EXIT_CANNOT_EXEC = 126,/* CMD was found but could not be executed */
    CLI_EXIT_NOT_FOUND = 127,  /* CMD was not found */
};

typedef struct cli_command cli_command;

/* The options every subcommand takes, and those of several. Strings borrow argv or the
 * environment. Durations are in milliseconds; -1 as noted per field. */
typedef struct cli_opts {
    const cli_command *command;  /* the subcommand being run */
    const char *table;
    const char *pk;
    const char *sk;
    const char *endpoint;
    const char *region;
    const char *profile;
    int64_t lease_ms;
    const char *label;
    bool label_given;
    int log_level;
    int log_format;            /* DDB_LOG_LOGFMT or DDB_LOG_JSON */
    bool server_clock;
    bool json;
    /* run / leader */
    int64_t wait_ms;           /* run: -1 forever */
    int conflict_exit;         /* run: the status when not acquired (default 75) */
    bool verbose;              /* run --verbose: what it waits for, and when it got it */
    int slots;                 /* run, state --slots N: 0 = a plain lock */
    int64_t kill_after_ms;
    int64_t pause_ms;          /* leader: -1 = a third of the lease */
    bool once;                 /* leader: exit after CMD exits 0 */
    /* put */
    bool if_held;
    const char *item_json;
    const char *item_file;
    const char *lock_table;
    const char *lock;
    const char *owner;
    const char *token;
    /* release */
    int64_t if_token;          /* --if-token; 0 when not given */
    /* table create */
    const char *ttl;
    bool exist_ok;
    const char *list_index;    /* list --index */
    const char *value;         /* run, leader --value */
    int64_t for_ms;            /* state --for; 0 when not given */
    long long count;           /* watch --count; 0 = until stopped */
    /* positional arguments and the command after them */
    char **args;
    int n_args;
    char **cmd;
    int n_cmd;
    char hostname[DDB_HOLDER_LABEL_MAX + 1];
} cli_opts;

/* One subcommand: its name, the options it takes (a bit set of CLI_OPT_*), its usage and
 * help text, and the function that runs it. */
enum {
    CLI_OPT_COMMON = 1 << 0,   /* table, pk, sk, endpoint, region, profile, log, clock */
    CLI_OPT_LEASE = 1 << 1,
    CLI_OPT_LABEL = 1 << 2,
    CLI_OPT_JSON = 1 << 3,
    CLI_OPT_WAIT = 1 << 4,
    CLI_OPT_KILL_AFTER = 1 << 5,
    CLI_OPT_PAUSE = 1 << 6,    /* --pause and --once */
    CLI_OPT_PUT = 1 << 7,      /* --if-held, --item, --item-file, --lock-table, ... */
    CLI_OPT_TABLE_CREATE = 1 << 8, /* --ttl, --exist-ok */
    CLI_OPT_CMD = 1 << 9,      /* NAME then CMD...: options end after NAME */
    CLI_OPT_INDEX = 1 << 10,   /* list --index */
    CLI_OPT_RELEASE = 1 << 11, /* release --if-token, --owner */
    CLI_OPT_VALUE = 1 << 12,   /* run, leader --value */
    CLI_OPT_FOR = 1 << 13,     /* state --for */
    CLI_OPT_COUNT = 1 << 14,   /* watch --count */
    CLI_OPT_LOCK_NAME = 1 << 15, /* the last positional argument is a lock's NAME */
    CLI_OPT_SLOTS = 1 << 16,   /* run, state --slots N */
};

struct cli_command {
    const char *name;
    unsigned options;
    int min_args, max_args;
    const char *usage;
    const char *help;
    int (*run)(cli_opts *o);
};

extern const char *cli_progname;
/* The subcommand being run, once its arguments are parsed; NULL before. */
extern const cli_command *cli_current;

/* args.c */
/* Parses "30s", "500ms", "2m", "1h", "1.5s", a bare number of seconds, and "0".
 * 0 or -1 on a malformed or out-of-range duration. */
int cli_parse_duration(const char *text, int64_t *out_ms);
/* Formats a duration the way it would be typed ("30s", "1m30s", "500ms"). */
void cli_format_duration(int64_t ms, char *buf, size_t size);
/* Parses argv (after the subcommand name) into o; prints a usage line and returns
 * CLI_EXIT_USAGE on a bad argument, 0 when parsed, or -1 when --help was printed. */
int cli_parse_args(const cli_command *cmd, int argc, char **argv, cli_opts *o);
/* Prints "dynalock SUB: MESSAGE", naming the bad argument, and the usage line to
 * stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints "dynalock: MESSAGE" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* env.c: the connection described by the options and the environment. */
typedef struct cli_conn {
    ddb_clock *clock;          /* the server clock with --clock server, else NULL */
    ddb_client *client;
    ddb_table *table;
    ddb_lock_table *locks;     /* only when asked for */
    ddb_log_stderr_options log; /* the log's format, and its clock: `clock` above */
    int log_level;             /* the least level logged (the client's too) */
    struct ddb_otel *otel;     /* the OTLP exporter when OTEL_EXPORTER_OTLP_*ENDPOINT is set */
    uint64_t span;             /* the command's span ("dynalock run"), 0 when none */
    int exit_code;             /* set before cli_conn_close: the span's process.exit.code
                                  (-1, the default: not known, not set) */
} cli_conn;
/* Opens a client, the table of the options (when need_table) and a lock table over it
 * (when need_locks). Prints the reason and returns an exit status on failure. */
int cli_conn_open(cli_conn *c, cli_opts *o, bool need_table, bool need_locks);
void cli_conn_close(cli_conn *c);
/* otel: a span of the command's own around a part of its work (e.g. `leader`'s contending
 * and leading), current on this thread until cli_span_end; 0 without an exporter.
 * exit_code >= 0 becomes process.exit.code; error_type (NULL on success) its status. */
uint64_t cli_span_start(cli_conn *c, const char *name);
void cli_span_end(cli_conn *c, uint64_t span, int exit_code, const char *error_type);
/* The endpoint to use: --endpoint, DYNALOCK_ENDPOINT, AWS_ENDPOINT_URL_DYNAMODB,
 * AWS_ENDPOINT_URL, or NULL for AWS's. */
const char *cli_endpoint(const cli_opts *o);
/* Maps a library error to an exit status and prints "dynalock: WHAT: MESSAGE". */
int cli_fail(const char *what, int rc, const ddb_error *err);
int cli_exit_for(int rc);
/* Logs a line through the client's sink under category "dynalock". */
void cli_log(cli_conn *c, int level, const char *message, const ddb_log_field *fields,
             size_t n);

/* signals.c: the signals, below every other file of the command. */
/* Installs the handlers: INT, TERM and HUP set cli_stop and are forwarded to a running
 * CMD; USR1, USR2 are only forwarded; CHLD wakes the wait loop; PIPE is ignored. */
int cli_signals_init(void);
/* Set once INT, TERM or HUP arrives; borrowed. */
ddb_cancel *cli_stop(void);
/* The last stopping signal received, 0 if none. */
int cli_stop_signal(void);
/* The self-pipe's read end, readable when a signal arrived. */
int cli_signals_fd(void);
/* Reads every byte the handlers wrote; forwards the signals to the process group pgid
 * when it is > 0. */
void cli_signals_drain(pid_t pgid);
/* In a forked child before exec: the default disposition for every signal the command
 * installed a handler for. Async-signal-safe. */
void cli_signals_default(void);
/* A token set when cli_stop() is, or when ms of real time have passed (ms < 0: never).
 * NULL when out of memory. Unref it. */
ddb_cancel *cli_deadline(int64_t ms);
/* proc.c: the child process. */
/* Notes the descriptors dynalock inherited, which CMD inherits in turn; call first. */
void cli_fds_init(void);

typedef struct cli_child {
    pid_t pid;                 /* also CMD's process group */
    int status;                /* waitpid status once exited */
    bool exited;
    bool lost;                 /* the lease ended while CMD ran */
    bool killed;               /* SIGKILL was sent after --kill-after */
} cli_child;

/* An environment for CMD: the process's, with DYNALOCK_* variables set or removed. */
typedef struct cli_env {
    char **vars;
    size_t n, cap;
} cli_env;
int cli_env_init(cli_env *e);
/* Sets (value != NULL) or removes (value == NULL) a variable. */
int cli_env_set(cli_env *e, const char *name, const char *value);
void cli_env_cleanup(cli_env *e);
/* Fills the variables CMD gets for a lease. */
int cli_env_for_lease(cli_env *e, const cli_opts *o, cli_conn *c, ddb_lease *lease);

/* Starts argv in a new process group with envp, with default signal dispositions and the
 * parent-death signal SIGTERM. Returns 0, or an exit status (126/127/71) after printing
 * the reason. */
int cli_child_spawn(cli_child *ch, char **argv, char **envp);
/* Waits for the child to exit, forwarding INT, TERM, HUP, USR1 and USR2 to its group.
 * When `lease` (may be NULL) is lost meanwhile, sends SIGTERM to the group, and SIGKILL
 * once kill_after_ms of real time have passed. Returns 0, or CLI_EXIT_OSERR. */
int cli_child_wait(cli_child *ch, ddb_lease *lease, int64_t kill_after_ms);
/* The status a shell would give: the exit code, or 128+signal. */
int cli_child_status(const cli_child *ch);
/* A description such as "exited with status 3" or "was killed by SIGTERM". */
void cli_child_describe(const cli_child *ch, char *buf, size_t size);

/* guard.c: the requests the command makes, and the watchdog that keeps its promise to
 * stop within a fraction of a second of a signal whatever DynamoDB does. */

/* How long a stopping command may still wait for DynamoDB once no CMD runs: enough for a
 * release that DynamoDB answers, little enough to feel immediate. Real time. */
#define CLI_STOP_GRACE_MS 500
/* The same for work that waits for no request (freeing the client and its threads). */
#define CLI_STOP_SAFETY_MS 5000

/* One request (or one library call that makes requests) the command is waiting for. */
typedef struct cli_req {
    const char *op;            /* DynamoDB's operation, e.g. "GetItem" */
    const char *what;          /* what it does, for messages: "cannot read lock 'a'" */
    bool writes;               /* its outcome is unknown when it is cut short */
    int64_t start_ms;          /* real time (CLOCK_MONOTONIC) it started */
    int stop_status;           /* status if the watchdog ends the command during it;
                                  -1: CLI_EXIT_UNKNOWN for a write, else 128+signal */
    const char *stop_note;     /* said after the watchdog's message, or NULL */
} cli_req;

/* Starts the watchdog thread (after cli_signals_init): once cli_stop() is set and no CMD
 * runs, a request still waited for has CLI_STOP_GRACE_MS (from the stop or its start,
 * whichever is later); after that the watchdog says which request DynamoDB did not
 * answer and ends the process with that request's stop status. Other work gets
 * CLI_STOP_SAFETY_MS. 0, or -1. */
int cli_guard_start(void);
/* Stops and joins the watchdog; from then on it never ends the process. */
void cli_guard_finish(void);
/* CMD runs (no grace counts while it does: CMD got the signal and is stopping). */
void cli_guard_child(bool running);
/* Real time in milliseconds (CLOCK_MONOTONIC). */
int64_t cli_now_ms(void);
/* Begins a request: fills r and makes it the one the watchdog names. Fields of a begun
 * request change only through these functions (the watchdog reads them). */
void cli_req_begin(cli_req *r, const char *op, const char *what, bool writes);
/* The status the watchdog ends the command with during r (instead of the default), and
 * a note it adds to its message (may be NULL). */
void cli_req_on_stop(cli_req *r, int status, const char *note);
/* Ends it (the watchdog names none). */
void cli_req_end(cli_req *r);
/* Ends r and reports its failure: "DynamoDB did not answer OP (waited 1.2s)" when it was
 * cut short without an answer (a signal, a deadline, the client's timeout), with "the
 * write may or may not have been applied" for a write; otherwise as cli_fail. Returns
 * the exit status: 128+signal (a read interrupted), CLI_EXIT_UNKNOWN (a write cut
 * short), CLI_EXIT_UNAVAILABLE (a read that timed out), or cli_exit_for(rc). */
int cli_req_fail(cli_req *r, int rc, const ddb_error *err);
/* True when rc says the request was cut short without an answer. */
bool cli_req_unanswered(int rc);
/* "did not answer GetItem (waited 1.2s)" into buf, measured from r's start. */
void cli_req_describe(const cli_req *r, char *buf, size_t size);


/* The subcommands. */
int cli_cmd_run(cli_opts *o);
int cli_cmd_leader(cli_opts *o);
int cli_cmd_put(cli_opts *o);
int cli_cmd_state(cli_opts *o);
int cli_cmd_list(cli_opts *o);
int cli_cmd_simulate(cli_opts *o);
int cli_cmd_release(cli_opts *o);
int cli_cmd_table(cli_opts *o);
int cli_cmd_watch(cli_opts *o);

/* state.c: JSON text output. */
void cli_json_string(const char *s);
/* Text from a table or the command line made safe for a terminal, into buf (always
 * terminated, cut at a whole escape when full): each byte of a control character (C0,
 * DEL, C1 such as U+009B), of a character that reorders or breaks the text (the
 * bidirectional controls such as U+202E, the line separators U+2028 and U+2029) and
 * each byte that is not part of valid UTF-8 is written as \xNN, so ESC sequences, new
 * lines and reversed text cannot reach the terminal; other characters, multi-byte ones
 * included, stay as they are. Returns buf. */
char *cli_safe_text(const char *s, char *buf, size_t size);
/* The characters (code points) of UTF-8 text, for aligning columns. */
size_t cli_text_chars(const char *s);
/* True when s is valid UTF-8. */
bool cli_utf8_valid(const char *s);

#endif
