/* A consumer of the installed libddb_otel: makes an exporter (no collector needed: it
 * sends nothing before it has something), continues a W3C traceparent and reads back
 * the traceparent of a span of its own. Exits 0 on success. */
#include <dynalock/ddb.h>
#include <dynalock/otel.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    ddb_error err;
    ddb_otel *otel = ddb_otel_new(&(ddb_otel_options){.endpoint = "http://127.0.0.1:9",
                                                      .ignore_environment = true,
                                                      .shutdown_timeout_ms = 100},
                                  &err);
    if (!otel) {
        fprintf(stderr, "otel_consumer: %s\n", err.message);
        return 1;
    }
    const char *tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    char out[DDB_OTEL_TRACEPARENT_SIZE];
    int ok = ddb_otel_telemetry(otel) != NULL && ddb_otel_set_remote_parent(otel, tp, &err) == 0 &&
             ddb_otel_traceparent(otel, 0, out) == 0 && strcmp(out, tp) == 0;
    ddb_otel_set_remote_parent(otel, NULL, NULL);
    ddb_otel_free(otel);
    if (!ok) {
        fprintf(stderr, "otel_consumer: the traceparent did not come back\n");
        return 1;
    }
    printf("otel consumer: ok\n");
    return 0;
}
