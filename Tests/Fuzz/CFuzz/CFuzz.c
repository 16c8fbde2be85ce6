#include "CFuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Without libFuzzer (a plain build): run each file or directory entry given once. */
#include <dirent.h>
#include <sys/stat.h>

static int run_file(const char *path, int (*callback)(const uint8_t *, size_t)) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", path); return 1; }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    size_t n = fread(data, 1, (size_t)size, f);
    fclose(f);
    callback(data, n);
    free(data);
    return 0;
}

__attribute__((weak)) int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *, size_t)) {
    int ran = 0;
    for (int i = 1; i < *argc; i++) {
        const char *arg = (*argv)[i];
        if (arg[0] == '-') continue;
        struct stat st;
        if (stat(arg, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            DIR *dir = opendir(arg);
            struct dirent *entry;
            while (dir && (entry = readdir(dir))) {
                if (entry->d_name[0] == '.') continue;
                char path[4096];
                snprintf(path, sizeof(path), "%s/%s", arg, entry->d_name);
                run_file(path, callback);
                ran++;
            }
            if (dir) closedir(dir);
        } else {
            run_file(arg, callback);
            ran++;
        }
    }
    fprintf(stderr, "appd-fuzz (no libFuzzer in this build): ran %d inputs once each\n", ran);
    return 0;
}
