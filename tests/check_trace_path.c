/*
 * check_trace_path: the trace's file name (src/proc.c, src/trace.c): %p, %h, %r and %%
 * expanded, unknown conversions refused; a path that exists and is not a regular file
 * (folder, symbolic link, device) refused at init without touching it; two contexts of
 * one process on one path: the second init fails (never a mixed file); a trace written
 * to a %p path lands under the process id; log lines carry [host:pid] when log_prefix
 * says so (on, or auto under a launcher).
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/proc.h"
#include "tests/test_util.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/convoy_tpath_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Empty and remove the scratch folder; returns how many entries it held. */
static int remove_dir(void)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int n = 0;
    char p[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        n++;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (unlink(p) != 0)
            rmdir(p);
    }
    closedir(d);
    rmdir(dir);
    return n;
}

static convoy_status_t init_traced(const char *path, convoy_context_t **ctx_p)
{
    tu_set_presets((const char *const[]){"devices", "host", "nthreads", "1", "trace", path, NULL});
    *ctx_p = NULL;
    return convoy_init(NULL, NULL, ctx_p);
}

static void expands_to(const char *pattern, const char *want)
{
    char *got = NULL;
    ck_assert_int_eq(convoy__proc_expand_path(pattern, &got), CONVOY_SUCCESS);
    ck_assert_str_eq(got, want);
    free(got);
}

START_TEST(expand_conversions)
{
    /* Proves: %p is the pid, %h the short host name, %r the first launcher rank variable
     * set (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID; 0 when none), %% a
     * percent sign; text without % is unchanged. */
    char want[512], host[256];
    convoy__proc_host(host, sizeof(host));
    ck_assert_ptr_null(strchr(host, '.'));
    snprintf(want, sizeof(want), "run-%ld-%s-0%%.json", (long)getpid(), host);
    expands_to("run-%p-%h-%r%%.json", want);
    expands_to("plain.json", "plain.json");
    setenv("SLURM_PROCID", "7", 1);
    expands_to("r%r", "r7");
    setenv("PMIX_RANK", "5", 1);
    expands_to("r%r", "r5");
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    expands_to("r%r.%r", "r3.3");
    setenv("OMPI_COMM_WORLD_RANK", "not-a-rank", 1);
    expands_to("r%r", "r5");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("PMIX_RANK");
    unsetenv("SLURM_PROCID");
    ck_assert_int_eq(convoy__proc_rank(), -1);
    /* A long expansion grows the buffer. */
    char pat[400] = "", big[4000] = "";
    for (int i = 0; i < 100; i++) {
        strcat(pat, "%h");
        strcat(big, host);
    }
    expands_to(pat, big);
}
END_TEST

START_TEST(expand_rejects)
{
    /* Proves: an unknown conversion and a lone trailing % are CONVOY_ERR_INVALID naming
     * the pattern and what is allowed, at convoy_init too (naming 'trace'); *path_p is
     * untouched. */
    const char *bad[] = {"run-%q.json", "run-%"};
    for (int k = 0; k < 2; k++) {
        char *got = (char *)"untouched";
        ck_assert_int_eq(convoy__proc_expand_path(bad[k], &got), CONVOY_ERR_INVALID);
        ck_assert_str_eq(got, "untouched");
        tu_assert_error_has(NULL, bad[k], "%p", "%r");
    }
    convoy_context_t *ctx;
    ck_assert_int_eq(init_traced("/tmp/x-%q.json", &ctx), CONVOY_ERR_INVALID);
    ck_assert_ptr_null(ctx);
    tu_assert_error_has(NULL, "'%q'", "trace");
}
END_TEST

START_TEST(refuses_special_files)
{
    /* Proves: a trace path that is a folder, a symbolic link (even to a regular file) or
     * a device fails init with CONVOY_ERR_IO naming the path and what it is, and the
     * link and its target are left as they were. */
    make_dir();
    char link[128], target[128], sub[128];
    snprintf(target, sizeof(target), "%s/target.json", dir);
    snprintf(link, sizeof(link), "%s/link.json", dir);
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    FILE *f = fopen(target, "w");
    ck_assert_ptr_nonnull(f);
    fputs("keep", f);
    fclose(f);
    ck_assert_int_eq(symlink(target, link), 0);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    const char *paths[] = {link, sub, "/dev/null"};
    const char *what[] = {"symbolic link", "directory", "device"};
    for (int k = 0; k < 3; k++) {
        convoy_context_t *ctx;
        ck_assert_int_eq(init_traced(paths[k], &ctx), CONVOY_ERR_IO);
        ck_assert_ptr_null(ctx);
        tu_assert_error_has(NULL, paths[k], what[k]);
    }
    struct stat sb;
    ck_assert_int_eq(lstat(link, &sb), 0);
    ck_assert(S_ISLNK(sb.st_mode));
    char buf[16] = "";
    f = fopen(target, "r");
    ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
    fclose(f);
    ck_assert_str_eq(buf, "keep");
    ck_assert_int_eq(remove_dir(), 3); /* no temporary file left */
}
END_TEST

START_TEST(one_path_one_context)
{
    /* Proves: while a context writes its trace to a path, a second context of the process
     * asking for the same file (also spelled differently) fails init with CONVOY_ERR_IO
     * naming it; once the first is finished the path is free again; each trace is whole. */
    make_dir();
    char path[128], other[160], cwd[512];
    snprintf(path, sizeof(path), "%s/run.json", dir);
    snprintf(other, sizeof(other), "%s/./run.json", dir);
    convoy_context_t *a, *b;
    ck_assert_int_eq(init_traced(path, &a), CONVOY_SUCCESS);
    ck_assert_int_eq(init_traced(other, &b), CONVOY_ERR_IO);
    ck_assert_ptr_null(b);
    tu_assert_error_has(NULL, "run.json", "another context");
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(init_traced("run.json", &b), CONVOY_ERR_IO);
    ck_assert_int_eq(chdir(cwd), 0);
    convoy_fini(a);
    ck_assert_int_eq(init_traced(path, &b), CONVOY_SUCCESS);
    convoy_fini(b);
    ck_assert_int_eq(remove_dir(), 1);
}
END_TEST

START_TEST(pid_in_path)
{
    /* Proves: CONVOY_TRACE=DIR/run-%p.json writes DIR/run-PID.json (and only that). */
    make_dir();
    char pattern[128], want[128];
    snprintf(pattern, sizeof(pattern), "%s/run-%%p.json", dir);
    snprintf(want, sizeof(want), "%s/run-%ld.json", dir, (long)getpid());
    setenv("CONVOY_TRACE", pattern, 1);
    convoy_context_t *ctx =
        tu_init((const char *const[]){"devices", "host", "nthreads", "1", NULL});
    convoy_fini(ctx);
    unsetenv("CONVOY_TRACE");
    ck_assert_int_eq(access(want, R_OK), 0);
    ck_assert_int_eq(remove_dir(), 1);
}
END_TEST

START_TEST(stale_temporary_files)
{
    /* Proves: temporary files a dead process left under this pid (a crash, a kill; the
     * pid reused since) do not stop a trace: it is written beside them. */
    make_dir();
    char path[128], stale[192];
    snprintf(path, sizeof(path), "%s/run.json", dir);
    int nstale = 0;
    for (int g = 0; g < 256; g++) { /* every open-count this process may be at */
        snprintf(stale, sizeof(stale), "%s.tmp.%ld.%d", path, (long)getpid(), g);
        FILE *f = fopen(stale, "w");
        ck_assert_ptr_nonnull(f);
        fclose(f);
        nstale++;
    }
    convoy_context_t *ctx;
    ck_assert_msg(init_traced(path, &ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(NULL));
    convoy_fini(ctx);
    ck_assert_int_eq(access(path, R_OK), 0);
    ck_assert_int_eq(remove_dir(), nstale + 1);
}
END_TEST

/* The log lines convoy_init prints at level info with log_prefix = mode. */
static void init_log(const char *mode, char *out, size_t len)
{
    char path[] = "/tmp/convoy_log_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    ck_assert_int_ge(dup2(fd, 2), 0);
    convoy_context_t *ctx = tu_init((const char *const[]){
        "devices", "host", "nthreads", "1", "verbose", "info", "log_prefix", mode, NULL});
    convoy_fini(ctx);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, out, len - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
}

START_TEST(log_prefix_lines)
{
    /* Proves: log_prefix=on starts every line with convoy[host:pid], off never does, and
     * auto does exactly when a launcher rank variable is set. */
    char host[256], want[300], log[8192];
    convoy__proc_host(host, sizeof(host));
    snprintf(want, sizeof(want), "convoy[%s:%ld] info: ", host, (long)getpid());
    init_log("on", log, sizeof(log));
    ck_assert_msg(strncmp(log, want, strlen(want)) == 0, "no %s in: %s", want, log);
    init_log("off", log, sizeof(log));
    ck_assert_msg(strncmp(log, "convoy info: ", 13) == 0, "a prefix with off: %s", log);
    init_log("auto", log, sizeof(log));
    ck_assert_msg(strncmp(log, "convoy info: ", 13) == 0, "a prefix without a rank: %s", log);
    setenv("PMI_RANK", "1", 1);
    init_log("auto", log, sizeof(log));
    unsetenv("PMI_RANK");
    ck_assert_msg(strncmp(log, want, strlen(want)) == 0, "no %s under a launcher: %s", want, log);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("trace_path");
    TCase *tc = tu_tcase(s, "path", 20);
    tcase_add_test(tc, expand_conversions);
    tcase_add_test(tc, expand_rejects);
    tcase_add_test(tc, refuses_special_files);
    tcase_add_test(tc, one_path_one_context);
    tcase_add_test(tc, pid_in_path);
    tcase_add_test(tc, stale_temporary_files);
    tcase_add_test(tc, log_prefix_lines);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
