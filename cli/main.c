/* main.c: the `dynalock` command: flock(1) across machines, leader election for any
 * program, lock state for operators and test scripts. This file holds the subcommand
 * table, the help texts and the dispatch; each subcommand has a module of its own. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define COMMON_HELP \
    "Common options:\n" \
    "  --table NAME        the table of the locks (default: $DYNALOCK_TABLE)\n" \
    "  --pk ATTR           its partition key (default: $DYNALOCK_PK, or pk)\n" \
    "  --sk ATTR           its sort key, if it has one (default: $DYNALOCK_SK)\n" \
    "  --endpoint URL      DynamoDB's endpoint (default: $DYNALOCK_ENDPOINT,\n" \
    "                      $AWS_ENDPOINT_URL_DYNAMODB, $AWS_ENDPOINT_URL, AWS's)\n" \
    "  --region REGION     (default: $DYNALOCK_REGION, $AWS_REGION, the profile's)\n" \
    "  --profile NAME      AWS profile (default: $AWS_PROFILE, or default)\n" \
    "  --log-level LEVEL   trace, debug, info, warn (default), error or off\n" \
    "  --log-format FMT    text (logfmt, the default) or json, on stderr\n" \
    "  --clock CLOCK       system (default), or server: follow the clock of a\n" \
    "                      fake server (fakedb --clock fake), for tests\n" \
    "  -h, --help          the command's help\n" \
    "Durations: 500ms, 30s, 1.5s, 2m, 1h, 1d; a bare number is seconds.\n" \
    "With $OTEL_EXPORTER_OTLP_ENDPOINT set, the spans and metrics go to that\n" \
    "OpenTelemetry collector (OTLP/HTTP; the other OTEL_* variables apply), in\n" \
    "the trace of $TRACEPARENT if set; the last export holds the exit 3s at most.\n"

/* What every subcommand's help ends with: the parts they share are told once, by
 * 'dynalock help options' and 'dynalock help exit-status' (and dynalock(1)). */
#define SEE_ALSO \
    "Common options (--table, --pk, --sk, --endpoint, --region, --profile,\n" \
    "--log-level, --log-format, --clock): 'dynalock help options'.\n" \
    "Exit statuses: 'dynalock help exit-status'. Everything: dynalock(1).\n"

#define EXIT_HELP \
    "Exit status:\n" \
    "  0     success; for run, CMD's status (128+N when signal N ended it)\n" \
    "  64    usage: a bad argument or option\n" \
    "  65    an item DynamoDB refused, or a non-lock item at the lock's key\n" \
    "  66    the --item-file cannot be read\n" \
    "  69    DynamoDB unreachable or answered with an error (no such table)\n" \
    "  70    internal error, or an answer that could not be understood\n" \
    "  71    a system call failed (fork, pipe)\n" \
    "  74    a local I/O error\n" \
    "  75    not acquired: another process holds the lock (or, after --wait,\n" \
    "        DynamoDB did not answer in time: the message says which);\n" \
    "        run --conflict-exit-code N makes it N\n" \
    "  76    the lease was lost while CMD ran; CMD was stopped\n" \
    "  77    put --if-held refused: the lease no longer holds the lock;\n" \
    "        release refused: the lock is not held with that token any more\n" \
    "  78    configuration: no credentials could be found\n" \
    "  79    a write cut short without an answer (a signal, or DynamoDB did\n" \
    "        not answer): it may or may not have been applied\n" \
    "  126   CMD cannot be executed;  127  CMD was not found\n" \
    "  128+N interrupted by signal N before CMD ran, or during a read\n"

static const cli_command COMMANDS[] = {
    {"run", CLI_OPT_COMMON | CLI_OPT_LEASE | CLI_OPT_LABEL | CLI_OPT_VALUE | CLI_OPT_WAIT |
                CLI_OPT_KILL_AFTER | CLI_OPT_CMD | CLI_OPT_LOCK_NAME | CLI_OPT_SLOTS,
     1, 1, "run [OPTIONS] NAME [--] CMD [ARG...]",
     "Acquires the lock NAME, runs CMD while it holds it, releases it when CMD\n"
     "exits and exits with CMD's status: flock(1) across machines.\n"
     "\n"
     "CMD runs in a process group of its own with the lease in its environment\n"
     "(DYNALOCK_LOCK, DYNALOCK_FENCING_TOKEN, DYNALOCK_OWNER, DYNALOCK_TABLE, ...:\n"
     "what 'dynalock put --if-held' reads). INT, TERM, HUP, USR1 and USR2 are\n"
     "passed on to it. A lost lease stops CMD (SIGTERM, SIGKILL after\n"
     "--kill-after) and dynalock exits 76. If dynalock dies, CMD gets SIGTERM.\n"
     "\n"
     "Options:\n"
     "  --wait DURATION     give up after this long on the client's clock, exit\n"
     "                      75, whatever DynamoDB does: the wait bounds every\n"
     "                      request (default: forever; 0 tries once, and so\n"
     "                      never takes over a holder that crashed: use a\n"
     "                      little more than one lease)\n"
     "  --verbose           say on stderr what it waits for at each poll (one\n"
     "                      line rewritten in place on a terminal), and the\n"
     "                      token and time it took once it has the lock\n"
     "  --conflict-exit-code N\n"
     "                      exit N instead of 75 when the lock is not acquired\n"
     "                      (flock -E): 1-63, 75 or 80-125; pick one CMD never\n"
     "                      exits with, as CMD's status passes through\n"
     "  --slots N           at most N hold NAME at once (1-100): any free slot K,\n"
     "                      the lock NAME#slotK, its own token; DYNALOCK_SLOT=K\n"
     "  --lease DURATION    the lease, renewed every third of it (default 30s)\n"
     "  --label TEXT        the holder label operators see (default: host name)\n"
     "  --value TEXT        a value the lease carries, shown by state, list and\n"
     "                      watch (e.g. this leader's address): 1 to 1024 bytes\n"
     "  --kill-after DURATION\n"
     "                      SIGKILL this long after SIGTERM on a lost lease\n"
     "                      (default 10s, real time)\n"
     "\n"
     "Durations: 500ms, 30s, 1.5s, 2m, 1h, 1d; a bare number is seconds.\n"
     "\n" SEE_ALSO,
     cli_cmd_run},
    {"leader", CLI_OPT_COMMON | CLI_OPT_LEASE | CLI_OPT_LABEL | CLI_OPT_VALUE |
                   CLI_OPT_KILL_AFTER |
                   CLI_OPT_PAUSE | CLI_OPT_CMD | CLI_OPT_LOCK_NAME,
     1, 1, "leader [OPTIONS] NAME [--] CMD [ARG...]",
     "Leader election for any program: contends for the lock NAME for as long as\n"
     "dynalock runs, and runs CMD while this process leads.\n"
     "\n"
     "  - CMD exits 0: the lease is released, which hands the lock on; dynalock\n"
     "    pauses (--pause) and contends again, so CMD runs again when this\n"
     "    process next leads. With --once, dynalock exits 0 instead.\n"
     "  - CMD fails (non-zero status, or a signal): a fault of the work. It is\n"
     "    logged, the lease is released, dynalock pauses and contends again.\n"
     "  - The lease is lost: CMD's group gets SIGTERM (SIGKILL after\n"
     "    --kill-after), and dynalock contends again at once.\n"
     "  - An error of the election (no such table, access denied, a non-lock\n"
     "    item at the lock's key): dynalock stops with a message and a status.\n"
     "  - SIGINT, SIGTERM or SIGHUP: passed on to CMD's group; once CMD exits,\n"
     "    the lease is released and dynalock exits 0.\n"
     "CMD's environment has the variables that 'run' sets, for the current term.\n"
     "\n"
     "Options:\n"
     "  --lease DURATION    the lease, renewed every third of it (default 30s)\n"
     "  --label TEXT        the holder label operators see (default: host name)\n"
     "  --value TEXT        a value the lease carries, shown by state, list and\n"
     "                      watch (e.g. this leader's address): 1 to 1024 bytes\n"
     "  --pause DURATION    pause after a term that CMD ended, on the client's\n"
     "                      clock (default: a third of the lease)\n"
     "  --once              exit 0 once CMD exits 0, instead of contending again\n"
     "  --kill-after DURATION\n"
     "                      SIGKILL this long after SIGTERM on a lost lease\n"
     "                      (default 10s, real time)\n"
     "\n" SEE_ALSO,
     cli_cmd_leader},
    {"put", CLI_OPT_COMMON | CLI_OPT_PUT, 0, 0,
     "put [OPTIONS] [--if-held] (--item JSON | --item-file PATH)",
     "Puts an item, in DynamoDB JSON ({\"pk\":{\"S\":\"a\"},\"n\":{\"N\":\"1\"}}),\n"
     "into --table. With --if-held, the write is fenced: one TransactWriteItems\n"
     "with the Put and a ConditionCheck that the lock item still has the owner\n"
     "and fencing token of the lease that 'run' or 'leader' put in the\n"
     "environment. If it no longer does, nothing is written and dynalock exits 77.\n"
     "\n"
     "Options:\n"
     "  --if-held           write only while the lease holds the lock\n"
     "  --item JSON         the item\n"
     "  --item-file PATH    the item, from a file ('-' for standard input)\n"
     "  --lock-table NAME   the table of the lock, if not --table (default:\n"
     "                      $DYNALOCK_TABLE); --pk and --sk name its keys\n"
     "  --lock NAME         the lock (default: $DYNALOCK_LOCK)\n"
     "  --owner ID          the lease's owner (default: $DYNALOCK_OWNER)\n"
     "  --token N           its fencing token (default: $DYNALOCK_FENCING_TOKEN)\n"
     "\n" SEE_ALSO,
     cli_cmd_put},
    {"state", CLI_OPT_COMMON | CLI_OPT_JSON | CLI_OPT_FOR | CLI_OPT_LOCK_NAME | CLI_OPT_SLOTS,
     1, 1, "state [OPTIONS] NAME",
     "Shows the lock NAME: held or free, its fencing token and, when held, its\n"
     "holder label, owner id, lease, value, and how long this reader has seen\n"
     "its record version unchanged. A holder renews (a new record version)\n"
     "every third of its lease: one seen unchanged for longer than its lease\n"
     "has stopped, and the next acquire takes the lock over. One read sees no\n"
     "change; --for reads for longer. Reads never write the lock.\n"
     "\n"
     "Options:\n"
     "  --for DURATION      read every third of the lease (a second when free)\n"
     "                      for this long, then show the last read\n"
     "  --slots N           the N slots of NAME ('run --slots'): how many are\n"
     "                      held, and a row per slot as 'list' shows it\n"
     "  --json              one JSON object: name, table, exists, held, holder,\n"
     "                      owner, record_version, fencing_token, lease_ms,\n"
     "                      value, unchanged_ms\n"
     "\n" SEE_ALSO,
     cli_cmd_state},
    {"list", CLI_OPT_COMMON | CLI_OPT_JSON | CLI_OPT_INDEX, 0, 0, "list [OPTIONS]",
     "Lists every lock item of the table, sorted by name: name, holder label,\n"
     "fencing token, lease, whether it is held, and its value. It scans the whole table\n"
     "(strongly consistent), or with --index queries a global secondary index\n"
     "whose partition key is _type, which reads the lock items only.\n"
     "\n"
     "Options:\n"
     "  --index NAME        query this index instead of scanning the table\n"
     "  --json              a JSON array of objects: name, held, holder, owner,\n"
     "                      fencing_token, lease_ms, value\n"
     "\n" SEE_ALSO,
     cli_cmd_list},
    {"watch", CLI_OPT_COMMON | CLI_OPT_JSON | CLI_OPT_COUNT | CLI_OPT_LOCK_NAME, 1, 1, "watch [OPTIONS] NAME",
     "Follows the lock NAME and prints a line when it starts and at each change\n"
     "of holder, fencing token or value: who leads, and where ('dynalock leader\n"
     "--value' writes the value). It reads as a waiting contender does, every\n"
     "third of the holder's lease (at most every 10s; every second when the lock\n"
     "is free), never writes, and rides out throttling and outages. It runs\n"
     "until interrupted (SIGINT or SIGTERM: exit 0) or --count lines.\n"
     "Each line: the time, held/free/no-item, the token, and when held the\n"
     "holder label, value, lease and owner id.\n"
     "\n"
     "Options:\n"
     "  --count N           exit 0 after N lines (the first included)\n"
     "  --json              one JSON object per line: time, and the fields of\n"
     "                      'state --json'\n"
     "\n" SEE_ALSO,
     cli_cmd_watch},
    {"release", CLI_OPT_COMMON | CLI_OPT_JSON | CLI_OPT_RELEASE | CLI_OPT_LOCK_NAME, 1, 1,
     "release [OPTIONS] NAME --if-token N [--owner ID]",
     "Hands back the lock NAME for an operator whose holder is stuck, on\n"
     "condition that it is still held with the fencing token that 'dynalock\n"
     "state' showed (and by this owner, with --owner): a process that took the\n"
     "lock since has a higher token and is never cleared. The write is the\n"
     "release a lease makes; the next holder gets the token plus one. A holder\n"
     "that is still alive loses its lease at its next renewal, but may act\n"
     "until then: release only a holder known to be dead or stuck.\n"
     "Exits 0 when released, 77 when not (the lock is not held with that token\n"
     "any more: taken over, released or deleted).\n"
     "\n"
     "Options:\n"
     "  --if-token N        the holder's fencing token, as shown (required)\n"
     "  --owner ID          and its owner id (default: any owner)\n"
     "  --json              one JSON object: name, table, if_token, owner,\n"
     "                      released\n"
     "\n" SEE_ALSO,
     cli_cmd_release},
    {"simulate", CLI_OPT_COMMON | CLI_OPT_LEASE | CLI_OPT_LABEL | CLI_OPT_JSON |
                     CLI_OPT_LOCK_NAME, 2, 2,
     "simulate [OPTIONS] holder|release|delete NAME",
     "Plays another process, for test scripts. It writes without conditions:\n"
     "never use it on a table in production.\n"
     "  holder   another process holds NAME, acquired just now and never\n"
     "           renewed, as a holder that crashed; prints its fencing token.\n"
     "           A lease of NAME is lost at its next renewal (taken_over).\n"
     "  release  whoever held NAME released it; a lease of NAME is lost\n"
     "           (taken_over).\n"
     "  delete   the item of NAME is deleted; a lease is lost (deleted), and\n"
     "           the next acquire starts the fencing token at 1.\n"
     "\n"
     "Options:\n"
     "  --lease DURATION    the simulated holder's lease (default 30s)\n"
     "  --label TEXT        the simulated holder's label (default: simulated)\n"
     "  --json              print the outcome as a JSON object\n"
     "\n" SEE_ALSO,
     cli_cmd_simulate},
    {"table", CLI_OPT_COMMON | CLI_OPT_TABLE_CREATE, 2, 2,
     "table [OPTIONS] create|delete NAME",
     "Creates a table with string keys named by --pk (default pk) and --sk\n"
     "(default none), on demand billing, and waits until it is ACTIVE; or\n"
     "deletes a table.\n"
     "\n"
     "Options:\n"
     "  --ttl ATTR          turn on time to live on ATTR (create)\n"
     "  --exist-ok          a table that exists already is success (create)\n"
     "\n" SEE_ALSO,
     cli_cmd_table},
};

#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void main_help(FILE *out)
{
    fprintf(out,
            "usage: dynalock COMMAND [OPTIONS] [ARGS]\n"
            "\n"
            "Coordinates processes through DynamoDB: locks with leases and fencing\n"
            "tokens, leader election, fenced writes.\n"
            "\n"
            "Commands:\n"
            "  run NAME -- CMD...       run CMD while holding the lock NAME\n"
            "  leader NAME -- CMD...    run CMD while this process leads\n"
            "  put --if-held --item J   a fenced write, from within CMD\n"
            "  state NAME               show a lock\n"
            "  list                     list the locks of the table\n"
            "  watch NAME               follow a lock: a line per new holder, token\n"
            "                           or value\n"
            "  release NAME --if-token N\n"
            "                           hand back a stuck holder's lock\n"
            "  simulate holder|release|delete NAME\n"
            "                           play another process (tests only)\n"
            "  table create|delete NAME\n"
            "                           create or delete a table\n"
            "\n"
            "'dynalock COMMAND --help' tells more of each; 'dynalock help options' the\n"
            "options they share, 'dynalock help exit-status' the exit statuses;\n"
            "'dynalock --version' the version. Everything: dynalock(1).\n");
}

int main(int argc, char **argv)
{
    cli_fds_init();
    if (argc < 2)
        return cli_usage_error(NULL, "missing COMMAND (run, leader, put, state, list, "
                               "watch, release, simulate or table)");
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
        if (argc > 2 && strcmp(sub, "help") == 0) {
            if (strcmp(argv[2], "options") == 0) {
                fputs(COMMON_HELP, stdout);
                return 0;
            }
            if (strcmp(argv[2], "exit-status") == 0) {
                fputs(EXIT_HELP, stdout);
                return 0;
            }
            for (size_t i = 0; i < N_COMMANDS; i++)
                if (strcmp(argv[2], COMMANDS[i].name) == 0) {
                    printf("usage: %s %s\n\n%s", cli_progname, COMMANDS[i].usage,
                           COMMANDS[i].help);
                    return 0;
                }
            return cli_usage_error(NULL, "unknown help topic '%s' (a command, options or "
                                   "exit-status)", argv[2]);
        }
        main_help(stdout);
        return 0;
    }
    if (strcmp(sub, "--version") == 0 || strcmp(sub, "-V") == 0) {
        printf("dynalock %s\n", ddb_version());
        return 0;
    }
    const cli_command *cmd = NULL;
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(sub, COMMANDS[i].name) == 0)
            cmd = &COMMANDS[i];
    if (!cmd) {
        if (sub[0] == '-')
            return cli_usage_error(NULL, "unknown option '%s' (options follow the command)",
                                   sub);
        return cli_usage_error(NULL, "unknown command '%s'", sub);
    }
    cli_opts o;
    int rc = cli_parse_args(cmd, argc - 2, argv + 2, &o);
    if (rc < 0)
        return 0;
    if (rc > 0)
        return rc;
    if (cli_signals_init() != 0 || cli_guard_start() != 0) {
        cli_error("cannot set up signal handling");
        return CLI_EXIT_OSERR;
    }
    rc = cmd->run(&o);
    cli_guard_finish();
    fflush(stdout);
    return rc;
}
