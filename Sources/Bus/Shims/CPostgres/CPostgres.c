#include "CPostgres.h"

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>

/* The functions appd calls, resolved from libpq.so.5 by `load`. */
static struct {
    PGconn *(*PQconnectdb)(const char *conninfo);
    void (*PQfinish)(PGconn *conn);
    ConnStatusType (*PQstatus)(const PGconn *conn);
    char *(*PQerrorMessage)(const PGconn *conn);
    int (*PQbackendPID)(const PGconn *conn);
    int (*PQsocket)(const PGconn *conn);
    PQnoticeProcessor (*PQsetNoticeProcessor)(PGconn *conn, PQnoticeProcessor proc, void *arg);
    PGresult *(*PQexec)(PGconn *conn, const char *query);
    PGresult *(*PQexecParams)(PGconn *conn, const char *command, int nParams, const Oid *paramTypes, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat);
    PGresult *(*PQprepare)(PGconn *conn, const char *stmtName, const char *query, int nParams, const Oid *paramTypes);
    PGresult *(*PQexecPrepared)(PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat);
    int (*PQconsumeInput)(PGconn *conn);
    PGnotify *(*PQnotifies)(PGconn *conn);
    void (*PQfreemem)(void *ptr);
    ExecStatusType (*PQresultStatus)(const PGresult *res);
    char *(*PQresultErrorField)(const PGresult *res, int fieldcode);
    void (*PQclear)(PGresult *res);
    int (*PQntuples)(const PGresult *res);
    int (*PQnfields)(const PGresult *res);
    char *(*PQfname)(const PGresult *res, int field_num);
    Oid (*PQftype)(const PGresult *res, int field_num);
    char *(*PQcmdTuples)(PGresult *res);
    char *(*PQgetvalue)(const PGresult *res, int tup_num, int field_num);
    int (*PQgetisnull)(const PGresult *res, int tup_num, int field_num);
    int (*PQgetlength)(const PGresult *res, int tup_num, int field_num);
    /* Pipeline mode (libpq 14+); NULL with an older libpq, which then runs statements one by one. */
    int (*PQenterPipelineMode)(PGconn *conn);
    int (*PQexitPipelineMode)(PGconn *conn);
    int (*PQpipelineSync)(PGconn *conn);
    int (*PQsendQueryParams)(PGconn *conn, const char *command, int nParams, const Oid *paramTypes, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat);
    int (*PQsendQueryPrepared)(PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat);
    PGresult *(*PQgetResult)(PGconn *conn);
} api;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char failure[512];

static void load(void) {
    void *library = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *reason = dlerror();
        snprintf(failure, sizeof failure, "PostgreSQL needs libpq (Debian: libpq5): %s", reason ? reason : "libpq.so.5 not found");
        return;
    }
#define RESOLVE(name) \
    if (!(*(void **)&api.name = dlsym(library, #name))) { \
        snprintf(failure, sizeof failure, "the libpq found (libpq.so.5) has no %s", #name); \
        return; \
    }
    RESOLVE(PQconnectdb)
    RESOLVE(PQfinish)
    RESOLVE(PQstatus)
    RESOLVE(PQerrorMessage)
    RESOLVE(PQbackendPID)
    RESOLVE(PQsocket)
    RESOLVE(PQsetNoticeProcessor)
    RESOLVE(PQexec)
    RESOLVE(PQexecParams)
    RESOLVE(PQprepare)
    RESOLVE(PQexecPrepared)
    RESOLVE(PQconsumeInput)
    RESOLVE(PQnotifies)
    RESOLVE(PQfreemem)
    RESOLVE(PQresultStatus)
    RESOLVE(PQresultErrorField)
    RESOLVE(PQclear)
    RESOLVE(PQntuples)
    RESOLVE(PQnfields)
    RESOLVE(PQfname)
    RESOLVE(PQftype)
    RESOLVE(PQcmdTuples)
    RESOLVE(PQgetvalue)
    RESOLVE(PQgetisnull)
    RESOLVE(PQgetlength)
#undef RESOLVE
    *(void **)&api.PQenterPipelineMode = dlsym(library, "PQenterPipelineMode");
    *(void **)&api.PQexitPipelineMode = dlsym(library, "PQexitPipelineMode");
    *(void **)&api.PQpipelineSync = dlsym(library, "PQpipelineSync");
    *(void **)&api.PQsendQueryParams = dlsym(library, "PQsendQueryParams");
    *(void **)&api.PQgetResult = dlsym(library, "PQgetResult");
    *(void **)&api.PQsendQueryPrepared = dlsym(library, "PQsendQueryPrepared");
    loaded = 1;
}

int appd_pq_load(char *error, size_t error_len) {
    pthread_once(&once, load);
    if (loaded) return 0;
    if (error && error_len) snprintf(error, error_len, "%s", failure);
    return -1;
}

PGconn *appd_PQconnectdb(const char *conninfo) { return api.PQconnectdb(conninfo); }
void appd_PQfinish(PGconn *conn) { api.PQfinish(conn); }
ConnStatusType appd_PQstatus(const PGconn *conn) { return api.PQstatus(conn); }
char *appd_PQerrorMessage(const PGconn *conn) { return api.PQerrorMessage(conn); }
int appd_PQbackendPID(const PGconn *conn) { return api.PQbackendPID(conn); }
int appd_PQsocket(const PGconn *conn) { return api.PQsocket(conn); }
PQnoticeProcessor appd_PQsetNoticeProcessor(PGconn *conn, PQnoticeProcessor proc, void *arg) { return api.PQsetNoticeProcessor(conn, proc, arg); }
PGresult *appd_PQexec(PGconn *conn, const char *query) { return api.PQexec(conn, query); }
PGresult *appd_PQexecParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat) { return api.PQexecParams(conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats, resultFormat); }
PGresult *appd_PQprepare(PGconn *conn, const char *stmtName, const char *query, int nParams, const Oid *paramTypes) { return api.PQprepare(conn, stmtName, query, nParams, paramTypes); }
PGresult *appd_PQexecPrepared(PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat) { return api.PQexecPrepared(conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat); }
int appd_PQconsumeInput(PGconn *conn) { return api.PQconsumeInput(conn); }
PGnotify *appd_PQnotifies(PGconn *conn) { return api.PQnotifies(conn); }
void appd_PQfreemem(void *ptr) { api.PQfreemem(ptr); }
ExecStatusType appd_PQresultStatus(const PGresult *res) { return api.PQresultStatus(res); }
char *appd_PQresultErrorField(const PGresult *res, int fieldcode) { return api.PQresultErrorField(res, fieldcode); }
void appd_PQclear(PGresult *res) { api.PQclear(res); }
int appd_PQntuples(const PGresult *res) { return api.PQntuples(res); }
int appd_PQnfields(const PGresult *res) { return api.PQnfields(res); }
char *appd_PQfname(const PGresult *res, int field_num) { return api.PQfname(res, field_num); }
Oid appd_PQftype(const PGresult *res, int field_num) { return api.PQftype(res, field_num); }
char *appd_PQcmdTuples(PGresult *res) { return api.PQcmdTuples(res); }
char *appd_PQgetvalue(const PGresult *res, int tup_num, int field_num) { return api.PQgetvalue(res, tup_num, field_num); }
int appd_PQgetisnull(const PGresult *res, int tup_num, int field_num) { return api.PQgetisnull(res, tup_num, field_num); }
int appd_PQgetlength(const PGresult *res, int tup_num, int field_num) { return api.PQgetlength(res, tup_num, field_num); }

const char *appd_pq_sqlstate(const PGresult *result) { return api.PQresultErrorField(result, PG_DIAG_SQLSTATE); }
const char *appd_pq_message(const PGresult *result) { return api.PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY); }

int appd_pq_wait_readable(PGconn *conn, int timeout_ms) {
    struct pollfd p = { .fd = api.PQsocket(conn), .events = POLLIN, .revents = 0 };
    if (p.fd < 0) return -1;
    int rc = poll(&p, 1, timeout_ms);
    if (rc < 0) return -1;
    return rc > 0 ? 1 : 0;
}

static void ignore_notice(void *arg, const char *message) { (void)arg; (void)message; }

void appd_pq_quiet(PGconn *conn) { api.PQsetNoticeProcessor(conn, ignore_notice, NULL); }

int appd_pq_has_pipeline(void) {
    return api.PQenterPipelineMode && api.PQexitPipelineMode && api.PQpipelineSync && api.PQsendQueryParams && api.PQsendQueryPrepared && api.PQgetResult;
}

int appd_pq_pipeline(PGconn *conn, int count, const char *const *names, const char *const *commands, const int *nparams, const Oid *const *types,
                     const char *const *const *values, const int *const *lengths, const int *const *formats, PGresult **results) {
    for (int i = 0; i < count; i++) results[i] = NULL;
    if (!appd_pq_has_pipeline() || !api.PQenterPipelineMode(conn)) return -1;
    for (int i = 0; i < count; i++) {
        int sent = names && names[i]
            ? api.PQsendQueryPrepared(conn, names[i], nparams[i], values[i], lengths[i], formats[i], 0)
            : api.PQsendQueryParams(conn, commands[i], nparams[i], types[i], values[i], lengths[i], formats[i], 0);
        if (!sent) return -1;
    }
    if (!api.PQpipelineSync(conn)) return -1;
    for (int i = 0; i < count; i++) {
        PGresult *result = api.PQgetResult(conn);
        if (!result) return -1;
        results[i] = result;
        /* Each statement's results end with a NULL. */
        for (PGresult *more = api.PQgetResult(conn); more; more = api.PQgetResult(conn)) api.PQclear(more);
    }
    PGresult *sync = api.PQgetResult(conn);
    int synced = sync && api.PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
    if (sync) api.PQclear(sync);
    if (!synced || !api.PQexitPipelineMode(conn)) return -1;
    return 0;
}
