/*
 * The process's host name, launcher rank and per-process file names (see proc.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/proc.h"
#include "src/util.h"

int convoy__proc_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v == NULL || *v == '\0')
            continue;
        char *end;
        long r = strtol(v, &end, 10);
        if (*end == '\0' && r >= 0 && r <= 0x7fffffff)
            return (int)r;
    }
    return -1;
}

void convoy__proc_host(char *buf, size_t len)
{
    if (len == 0)
        return;
    if (gethostname(buf, len) != 0 || buf[0] == '\0') {
        snprintf(buf, len, "unknown");
        return;
    }
    buf[len - 1] = '\0';
    buf[strcspn(buf, ".")] = '\0';
}

convoy_status_t convoy__proc_expand_path(const char *pattern, char **path_p)
{
    char host[256], num[32];
    size_t cap = strlen(pattern) + 1, o = 0;
    char *out = malloc(cap);
    if (out == NULL)
        return convoy__error(NULL, CONVOY_ERR_NOMEM, "out of host memory for a file name");
    for (const char *p = pattern; *p != '\0'; p++) {
        const char *piece = p;
        size_t plen = 1;
        if (*p == '%') {
            switch (p[1]) {
            case 'p':
                snprintf(num, sizeof(num), "%ld", (long)getpid());
                piece = num;
                break;
            case 'r': {
                int r = convoy__proc_rank();
                snprintf(num, sizeof(num), "%d", r < 0 ? 0 : r);
                piece = num;
                break;
            }
            case 'h':
                convoy__proc_host(host, sizeof(host));
                piece = host;
                break;
            case '%': piece = "%"; break;
            default:
                free(out);
                return convoy__error(NULL, CONVOY_ERR_INVALID,
                                     "unknown conversion '%%%.1s' in the file name '%s'; allowed: "
                                     "%%p (pid), %%h (host), %%r (rank), %%%% (a %%)",
                                     p[1] ? p + 1 : "", pattern);
            }
            plen = strlen(piece);
            p++;
        }
        if (o + plen + 1 > cap) {
            cap = 2 * (o + plen + 1);
            char *bigger = realloc(out, cap);
            if (bigger == NULL) {
                free(out);
                return convoy__error(NULL, CONVOY_ERR_NOMEM, "out of host memory for a file name");
            }
            out = bigger;
        }
        memcpy(out + o, piece, plen);
        o += plen;
    }
    out[o] = '\0';
    *path_p = out;
    return CONVOY_SUCCESS;
}
