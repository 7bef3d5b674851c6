/* Symbol export for the dynalock libraries. Everything is built with
 * -fvisibility=hidden; only functions of the public headers marked DDB_API (libddb,
 * libddb_testing) or FAKEDB_API (libfakedb) are visible outside the library. Internal
 * functions (ddb__*) never carry it (docs/internals/modules.md). */
#ifndef DYNALOCK_EXPORT_H
#define DYNALOCK_EXPORT_H

#if defined(__GNUC__)
#define DDB_API __attribute__((visibility("default")))
#define FAKEDB_API __attribute__((visibility("default")))
#else
#define DDB_API
#define FAKEDB_API
#endif

#endif
