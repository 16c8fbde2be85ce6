#ifndef APPD_CNET_H
#define APPD_CNET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// Outbound TCP and TLS for the LLM provider client: every call takes a timeout, and
/// `appd_net_abort` from another thread ends any call in progress at once.

typedef struct appd_conn appd_conn;

/// Connects to host:port (name or literal, IPv4/IPv6) within `timeout_ms`; with `tls`, also
/// completes a TLS handshake that verifies the certificate chain (system trust store, or
/// `ca_file` when not NULL) and the host name. Returns NULL with a reason in `error`.
appd_conn *appd_net_connect(const char *host, uint16_t port, int tls, const char *ca_file, int timeout_ms, char *error, size_t error_len);

/// Writes all of `data` within `timeout_ms`. Returns 0, or -1 (error text in `error`).
int appd_net_write(appd_conn *c, const uint8_t *data, size_t len, int timeout_ms, char *error, size_t error_len);

/// Reads what is available, waiting up to `timeout_ms`. Returns bytes read (> 0), 0 at the end
/// of the stream, -1 on an error, -2 on timeout, -3 when aborted.
ssize_t appd_net_read(appd_conn *c, uint8_t *buffer, size_t len, int timeout_ms, char *error, size_t error_len);

/// Ends the connection from any thread: a read or write in progress returns at once.
void appd_net_abort(appd_conn *c);

/// Closes and frees (after the reading thread is done with it).
void appd_net_close(appd_conn *c);

#endif
