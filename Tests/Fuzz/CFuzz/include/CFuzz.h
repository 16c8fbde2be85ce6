#ifndef APPD_CFUZZ_H
#define APPD_CFUZZ_H
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver. Built with -sanitize=fuzzer it is libFuzzer's; otherwise a weak
/// fallback in CFuzz.c runs each file named on the command line once (regression mode).
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
