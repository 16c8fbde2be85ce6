#ifndef APPD_CNET_H
#define APPD_CNET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// Outbound TCP and TLS for the HTTP client, in non-blocking steps for an event loop.

typedef struct appd_conn appd_conn;

/// Closes and frees.
void appd_net_close(appd_conn *c);

/* Non-blocking steps, for an event loop. The caller watches `appd_net_fd` and calls the step
   again when the socket is ready for what the step asked for. Steps return:
   APPD_NET_WANT_READ / APPD_NET_WANT_WRITE to wait, -1 on an error (text in `error`). */
#define APPD_NET_WANT_READ (-10)
#define APPD_NET_WANT_WRITE (-11)

/// Resolves host:port (blocking: call it off the loop). Returns the number of addresses put in
/// `out` (at most `max`, each `appd_net_address`), or -1 with the reason in `error`.
typedef struct { unsigned char bytes[128]; uint32_t length; int family; } appd_net_address;
int appd_net_resolve(const char *host, uint16_t port, appd_net_address *out, int max, char *error, size_t error_len);

/// Starts a non-blocking connect to `address`; with `tls`, prepares a client that verifies
/// the chain (system store or `ca_file`) and `host`. NULL with a reason on failure.
appd_conn *appd_net_start(const appd_net_address *address, int tls, const char *host, const char *ca_file, char *error, size_t error_len);

/// The socket to watch.
int appd_net_fd(appd_conn *c);

/// Finishes the connect and the TLS handshake: 1 when done.
int appd_net_connect_step(appd_conn *c, char *error, size_t error_len);

/// Writes what the socket takes now: bytes written (> 0).
ssize_t appd_net_write_step(appd_conn *c, const uint8_t *data, size_t len, char *error, size_t error_len);

/// Reads what is there now: bytes read (> 0), 0 at the end of the stream (a TLS stream cut
/// without close_notify is an error, never an end).
ssize_t appd_net_read_step(appd_conn *c, uint8_t *buffer, size_t len, char *error, size_t error_len);

#endif
