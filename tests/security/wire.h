/* wire.h: a raw HTTP/1.1 server on loopback for the security suite. It answers each
 * request from a table of canned answers (by method and path prefix) and keeps every
 * byte it received, so that a test can say what reached the wire and what never did
 * (a request smuggled in a header, a request to a path the client must not build). */
#ifndef SECURITY_WIRE_H
#define SECURITY_WIRE_H

#include <stddef.h>

typedef struct wire wire;

wire *wire_start(void);
void wire_stop(wire *w);
/* "http://127.0.0.1:PORT" */
const char *wire_url(const wire *w);
/* Answers METHOD requests whose path starts with prefix with status and body (copied);
 * the first route that matches answers; none: 404. */
void wire_route(wire *w, const char *method, const char *prefix, int status, const char *body);
/* Requests received whose path starts with prefix (NULL: all of them). */
int wire_count(wire *w, const char *prefix);
/* Bytes received on every connection so far. */
size_t wire_bytes(wire *w);
/* Whether needle occurs in what was received. */
int wire_saw(wire *w, const char *needle);

#endif
