#ifndef APPD_CPOSTGRES_H
#define APPD_CPOSTGRES_H

/* libpq's types and constants only: appd does not link libpq. It is loaded (dlopen) the first
   time PostgreSQL is used, so a daemon on SQLite (the default) maps neither libpq nor what it
   pulls in (Kerberos, LDAP, GnuTLS, SASL: about 3 MB of resident pages at start). */
#include <postgresql/libpq-fe.h>
#include <stddef.h>

/// Loads libpq.so.5 and resolves what appd calls (once; later calls return the first outcome).
/// 0 when loaded; -1 with the reason in `error` (libpq missing, or too old).
int appd_pq_load(char *error, size_t error_len);

/* The libpq functions appd calls, through the loaded library: call appd_pq_load first. */

PGconn *appd_PQconnectdb(const char *conninfo);
void appd_PQfinish(PGconn *conn);
ConnStatusType appd_PQstatus(const PGconn *conn);
char *appd_PQerrorMessage(const PGconn *conn);
int appd_PQbackendPID(const PGconn *conn);
int appd_PQsocket(const PGconn *conn);
PQnoticeProcessor appd_PQsetNoticeProcessor(PGconn *conn, PQnoticeProcessor proc, void *arg);
PGresult *appd_PQexec(PGconn *conn, const char *query);
PGresult *appd_PQexecParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat);
PGresult *appd_PQprepare(PGconn *conn, const char *stmtName, const char *query, int nParams, const Oid *paramTypes);
PGresult *appd_PQexecPrepared(PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat);
int appd_PQconsumeInput(PGconn *conn);
PGnotify *appd_PQnotifies(PGconn *conn);
void appd_PQfreemem(void *ptr);
ExecStatusType appd_PQresultStatus(const PGresult *res);
char *appd_PQresultErrorField(const PGresult *res, int fieldcode);
void appd_PQclear(PGresult *res);
int appd_PQntuples(const PGresult *res);
int appd_PQnfields(const PGresult *res);
char *appd_PQfname(const PGresult *res, int field_num);
Oid appd_PQftype(const PGresult *res, int field_num);
char *appd_PQcmdTuples(PGresult *res);
char *appd_PQgetvalue(const PGresult *res, int tup_num, int field_num);
int appd_PQgetisnull(const PGresult *res, int tup_num, int field_num);
int appd_PQgetlength(const PGresult *res, int tup_num, int field_num);

/// SQLSTATE and the primary message of a failed result (PG_DIAG_* are macros over chars).
const char *appd_pq_sqlstate(const PGresult *result);
const char *appd_pq_message(const PGresult *result);

/// Waits until the connection's socket is readable or `timeout_ms` passes: 1 readable, 0 timed
/// out, -1 error.
int appd_pq_wait_readable(PGconn *conn, int timeout_ms);

/// libpq prints server notices (and a connection's asynchronous FATAL) to stderr by default;
/// appd reports what matters through its own errors and log instead.
void appd_pq_quiet(PGconn *conn);

/* Whether the loaded libpq has pipeline mode (14+). */
int appd_pq_has_pipeline(void);

/* Sends `count` statements (with text or binary parameters) in one pipeline — one round trip —
   each the prepared statement names[i] when `names` and names[i] are not NULL, else the text
   commands[i] (unnamed, parsed by the server each time), and stores each one's result in results[i] (PGRES_PIPELINE_ABORTED after a failed one).
   Returns 0 when every result was read and the connection is out of pipeline mode again; -1
   when libpq has no pipeline mode or the connection failed (results read so far are stored;
   the caller clears every non-NULL one either way). */
int appd_pq_pipeline(PGconn *conn, int count, const char *const *names, const char *const *commands, const int *nparams, const Oid *const *types,
                     const char *const *const *values, const int *const *lengths, const int *const *formats, PGresult **results);

#endif
