/*
 * convoy-info: the build (version, configure line, vendor versions, device components
 * compiled in), the components (schedulers and devices, available or not and why), what
 * devices=auto selects here, the hardware topology, and every parameter with its
 * default, allowed values, current value and doc. --parsable prints the same as
 * NAME=VALUE lines; --markdown prints the parameter tables for doc/reference.md.
 *
 * Exit status: 0; 1 when a --convoy-* option or CONVOY_* variable is invalid (unknown
 * parameter, bad value, unknown scheduler or device); 2 for a bad command line.
 */
#include "config.h"

#include <getopt.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/bind.h"
#include "src/core.h"

extern char **environ;

/* 1048576 -> "1M": the largest power-of-1024 unit that divides the size. */
static const char *size_text(double bytes, char *buf, size_t len)
{
    static const char units[] = "KMGTP";
    double v = bytes;
    int u = -1;
    while (v >= 1024 && u < 4 && (double)(long long)(v / 1024) * 1024 == v) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%.0f", bytes);
    else
        snprintf(buf, len, "%.0f%c", v, units[u]);
    return buf;
}

/* "fifo|batch", "1 .. 1024", "4K .. 1G"; empty for booleans and free text. */
static const char *allowed_text(const convoy__param_def_t *d, char *buf, size_t len)
{
    buf[0] = '\0';
    if (d->type == CONVOY__PARAM_CHOICE)
        snprintf(buf, len, "%s", d->choices);
    else if (d->type == CONVOY__PARAM_SIZE) {
        char lo[32], hi[32];
        snprintf(buf, len, "%s .. %s", size_text(d->min, lo, sizeof(lo)),
                 size_text(d->max, hi, sizeof(hi)));
    } else if (d->type == CONVOY__PARAM_INT || d->type == CONVOY__PARAM_DOUBLE)
        snprintf(buf, len, "%.10g .. %.10g", d->min, d->max);
    else if (d->type == CONVOY__PARAM_BOOL)
        snprintf(buf, len, "0|1");
    return buf;
}

/* The scheduler and device names, for the string parameters whose values they are. */
static void component_names(const convoy__param_def_t *d, char *buf, size_t len)
{
    size_t o = 0;
    int sched = strcmp(d->name, "sched") == 0;
    buf[0] = '\0';
    if (!sched)
        o += (size_t)snprintf(buf, len, "auto|");
    for (int i = 0; o + 1 < len; i++) {
        const char *name =
            sched ? (convoy__sched_components[i] ? convoy__sched_components[i]->name : NULL)
                  : (convoy__device_components[i] ? convoy__device_components[i]->name : NULL);
        if (name == NULL)
            break;
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i > 0 ? "|" : "", name);
    }
    if (!sched && o + 1 < len)
        snprintf(buf + o, len - o, " (a list, ^name excludes)");
}

static const char *param_allowed(const char *owner, const convoy__param_def_t *d, char *buf,
                                 size_t len)
{
    if (strcmp(owner, "core") == 0 &&
        (strcmp(d->name, "sched") == 0 || strcmp(d->name, "devices") == 0))
        component_names(d, buf, len);
    else
        allowed_text(d, buf, len);
    return buf;
}

/* CONVOY_NAME for a parameter name. */
static const char *env_name(const char *name, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "CONVOY_");
    for (const char *c = name; *c && o + 1 < len; c++)
        buf[o++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
    buf[o] = '\0';
    return buf;
}

typedef struct out {
    int parsable;
    const convoy__params_t *params; /* current values; NULL for --markdown */
} out_t;

static void print_table(const char *owner, const convoy__param_def_t *table, void *arg)
{
    const out_t *o = arg;
    for (const convoy__param_def_t *d = table; d->name != NULL; d++) {
        const convoy__param_value_t *v = convoy__param_lookup(o->params, d->name);
        char allowed[256], env[96];
        param_allowed(owner, d, allowed, sizeof(allowed));
        if (o->parsable) {
            printf("%s=%s\n", env_name(d->name, env, sizeof(env)), v->text);
            printf("param.%s.owner=%s\nparam.%s.type=%s\nparam.%s.default=%s\n"
                   "param.%s.allowed=%s\nparam.%s.source=%s\n",
                   d->name, owner, d->name, convoy__param_type_name(d->type), d->name, d->def,
                   d->name, allowed, d->name, convoy__param_source_name(v->source));
            continue;
        }
        printf("  %-22s %-7s default %-8s current %-8s (%s, %s)\n", d->name,
               convoy__param_type_name(d->type), d->def[0] ? d->def : "''",
               v->text[0] ? v->text : "''", owner, convoy__param_source_name(v->source));
        if (allowed[0])
            printf("      allowed: %s\n", allowed);
        printf("      %s\n", d->doc);
    }
}

static void markdown_table(const char *owner, const convoy__param_def_t *table, void *arg)
{
    (void)arg;
    printf("\n### %s\n\n| parameter (env var) | type | default | allowed | meaning |\n"
           "|---|---|---|---|---|\n",
           owner);
    for (const convoy__param_def_t *d = table; d->name != NULL; d++) {
        char env[96], allowed[256];
        /* Only the types with a range or a list: the tables predate the others. */
        if (d->type == CONVOY__PARAM_CHOICE || d->type == CONVOY__PARAM_SIZE ||
            d->type == CONVOY__PARAM_INT || d->type == CONVOY__PARAM_DOUBLE)
            allowed_text(d, allowed, sizeof(allowed));
        else
            allowed[0] = '\0';
        for (char *c = allowed; *c; c++)
            if (*c == '|')
                *c = '/';
        printf("| `%s` (`%s`) | %s | `%s` | %s | %s |\n", d->name,
               env_name(d->name, env, sizeof(env)), convoy__param_type_name(d->type), d->def,
               allowed, d->doc);
    }
}

/* "12.8" for CUDART_VERSION 12080; "no" when not built. */
static const char *cuda_text(int v, char *buf, size_t len)
{
    if (!CONVOY_HAVE_CUDA)
        return "no";
    snprintf(buf, len, "%d.%d", v / 1000, v % 1000 / 10);
    return buf;
}

/* "6.4.1" for HIP_VERSION 60401000 (major * 10^7 + minor * 10^5 + patch). */
static const char *hip_text(long v, char *buf, size_t len)
{
    if (!CONVOY_HAVE_HIP)
        return "no";
    snprintf(buf, len, "%ld.%ld.%ld", v / 10000000, v / 100000 % 100, v % 100000);
    return buf;
}

static void print_build(int parsable)
{
    char cu[32], hi[32], hw[32];
    unsigned api = hwloc_get_api_version();
    snprintf(hw, sizeof(hw), "%u.%u.%u", api >> 16, (api >> 8) & 0xff, api & 0xff);
    const char *kinds[] = {"cpu", "sim", "cuda", "hip", "ze"};
    _Static_assert(sizeof(kinds) / sizeof(kinds[0]) == CONVOY_DEVICE_KIND_COUNT,
                   "a name for every device kind");
    if (parsable) {
        printf("version=%s\nbuild.configure=%s\nbuild.hwloc=%s\nbuild.hwloc_runtime_api=%s\n"
               "build.cuda=%s\nbuild.hip=%s\n",
               PACKAGE_VERSION, CONVOY_CONFIGURE_ARGS, CONVOY_HWLOC_BUILD_VERSION, hw,
               cuda_text(CONVOY_CUDA_VERSION, cu, sizeof(cu)),
               hip_text(CONVOY_HIP_VERSION, hi, sizeof(hi)));
        for (int k = 0; k < CONVOY_DEVICE_KIND_COUNT; k++)
            printf("build.device.%s=%d\n", kinds[k],
                   convoy_build_has_device((convoy_device_kind_t)k));
        return;
    }
    printf("build:\n  configure     %s\n  hwloc         %s (runtime API %s)\n  CUDA          %s\n"
           "  HIP           %s\n  device kinds ",
           CONVOY_CONFIGURE_ARGS[0] ? CONVOY_CONFIGURE_ARGS : "(no arguments)",
           CONVOY_HWLOC_BUILD_VERSION, hw, cuda_text(CONVOY_CUDA_VERSION, cu, sizeof(cu)),
           hip_text(CONVOY_HIP_VERSION, hi, sizeof(hi)));
    for (int k = 0; k < CONVOY_DEVICE_KIND_COUNT; k++)
        if (convoy_build_has_device((convoy_device_kind_t)k))
            printf(" %s", kinds[k]);
    printf("\n");
}

/* A context from presets alone (the environment is cleared by main), or NULL. */
static convoy_context_t *probe_init(const char *devices)
{
    convoy_context_t *probe = NULL;
    if (convoy_param_preset("devices", devices) != CONVOY_SUCCESS ||
        convoy_param_preset("nthreads", "1") != CONVOY_SUCCESS ||
        convoy_param_preset("bind", "0") != CONVOY_SUCCESS ||
        convoy_init(NULL, NULL, &probe) != CONVOY_SUCCESS)
        probe = NULL;
    convoy_param_preset_clear();
    return probe;
}

/* Every component and whether it is available here, asked with the parameters a
 * program would get (defaults, CONVOY_* variables, the --convoy-* options): query()
 * needs no context, so nothing is started. Devices in decreasing priority. */
static void print_components(const convoy__params_t *params, int parsable)
{
    if (!parsable)
        printf("schedulers:\n");
    for (int i = 0; convoy__sched_components[i] != NULL; i++) {
        const convoy__sched_component_t *c = convoy__sched_components[i];
        if (parsable)
            printf("sched.%s.priority=%d\n", c->name, c->priority);
        else
            printf("  %-8s priority %-3d %s\n", c->name, c->priority, c->doc);
    }
    if (!parsable)
        printf("devices (asked in decreasing priority):\n");
    for (int i = 0; convoy__device_components[i] != NULL; i++) {
        const convoy__device_component_t *c = convoy__device_components[i];
        char why[512] = "";
        int n = c->query(params, why, sizeof(why));
        if (parsable)
            printf("device.%s.priority=%d\ndevice.%s.count=%d\ndevice.%s.why=%s\n", c->name,
                   c->priority, c->name, n > 0 ? n : 0, c->name, why);
        else if (n > 0 && c->kind == CONVOY_DEVICE_CPU)
            printf("  %-8s priority %-3d available: %s  %s\n", c->name, c->priority, why, c->doc);
        else if (n > 0)
            printf("  %-8s priority %-3d available: %d device(s)  %s\n", c->name, c->priority, n,
                   c->doc);
        else
            printf("  %-8s priority %-3d not available: %s  (%s)\n", c->name, c->priority,
                   why[0] ? why : "unknown", c->doc);
    }
    /* What a program that sets nothing gets. */
    convoy_context_t *probe = probe_init("auto");
    char sel[512] = "host";
    size_t o = strlen(sel);
    for (int i = 0; probe != NULL && i < convoy_accel_count(probe) && o + 1 < sizeof(sel); i++)
        o += (size_t)snprintf(sel + o, sizeof(sel) - o, ",%s", convoy_accel_name(probe, i));
    if (probe == NULL)
        snprintf(sel, sizeof(sel), "(init failed: %s)", convoy_last_error(NULL));
    convoy_fini(probe);
    if (parsable)
        printf("devices.auto=%s\n", sel);
    else
        printf("devices=auto selects here: %s\n", sel);
}

static void print_topology(int parsable)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        printf(parsable ? "topology.error=hwloc could not read it\n"
                        : "topology: hwloc could not read it\n");
        return;
    }
    int np = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    int nn = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    int nc = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int nt = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    if (parsable)
        printf("topology.packages=%d\ntopology.numa_nodes=%d\ntopology.cores=%d\n"
               "topology.pus=%d\n",
               np, nn, nc, nt);
    else
        printf("topology: %d package(s), %d NUMA node(s), %d core(s), %d hardware thread(s)\n", np,
               nn, nc, nt);
    hwloc_topology_destroy(topo);
}

/* Where convoy_init would put each thread, from this process's binding (convoy-info run
 * under taskset or a launcher shows what the program would get there). */
static void print_binding(const convoy__params_t *params, int parsable)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0)
        return;
    hwloc_bitmap_t set = convoy__bind_process_set(topo);
    if (set == NULL) {
        hwloc_topology_destroy(topo);
        return;
    }
    char text[512];
    hwloc_bitmap_list_snprintf(text, sizeof(text), set);
    int ncores = convoy__bind_core_count(topo, set);
    int n = (int)convoy__param_int(params, "nthreads");
    int bind = convoy__param_int(params, "bind") != 0;
    if (n == 0)
        n = ncores;
    if (parsable)
        printf("bind.process=%s\nbind.cores=%d\nbind.workers=%d\n", text, ncores, n);
    else
        printf("binding: this process may run on PUs %s (%d core(s)); %d CPU worker(s)%s\n", text,
               ncores, n, bind ? "" : ", not bound (bind=0)");
    for (int i = 0; i < n; i++) {
        hwloc_bitmap_t w = bind ? convoy__bind_worker_set(topo, set, i) : hwloc_bitmap_dup(set);
        if (w == NULL)
            break;
        hwloc_bitmap_list_snprintf(text, sizeof(text), w);
        if (parsable)
            printf("bind.worker.%d=%s\n", i, text);
        else
            printf("  cpu worker %-4d PUs %s\n", i, text);
        hwloc_bitmap_free(w);
    }
    hwloc_bitmap_list_snprintf(text, sizeof(text), set);
    if (parsable)
        printf("bind.progress=%s\n", text);
    else
        printf("  progress threads: PUs %s (each accelerator's, within the process's binding "
               "when bind is on; not yet near its device)\n",
               text);
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
}

/* The checks convoy_init makes on sched and devices (names of components), made here so
 * that a bad value is an error rather than a "current" value. */
static convoy_status_t check_names(const convoy__params_t *params)
{
    static convoy_context_t shell; /* convoy__select_sched reads only .params */
    shell.params = *params;
    convoy_status_t st = convoy__select_sched(&shell);
    if (st != CONVOY_SUCCESS)
        return st;
    const char *spec = convoy__param_str(params, "devices");
    if (strcmp(spec, "auto") == 0)
        return CONVOY_SUCCESS;
    for (const char *p = spec; *p != '\0';) {
        size_t len = strcspn(p, ",");
        const char *name = p + (p[0] == '^');
        size_t nl = len - (size_t)(p[0] == '^');
        int found = len == 0;
        for (int i = 0; !found && convoy__device_components[i] != NULL; i++)
            found = strlen(convoy__device_components[i]->name) == nl &&
                    strncmp(convoy__device_components[i]->name, name, nl) == 0;
        if (!found) {
            char allowed[256];
            component_names(convoy__param_find_def("devices", NULL), allowed, sizeof(allowed));
            return convoy__error(NULL, CONVOY_ERR_NOT_FOUND,
                                 "unknown device '%.*s' (parameter 'devices' = '%s'); allowed: %s",
                                 (int)nl, name, spec, allowed);
        }
        p += len + (p[len] == ',');
    }
    return CONVOY_SUCCESS;
}

/* Drop every CONVOY_* variable: the probes must see presets only (the environment wins
 * over presets), and their values are already in the loaded parameters. */
static void clear_convoy_env(void)
{
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; e != NULL && *e != NULL; e++) {
            if (strncmp(*e, "CONVOY_", 7) != 0)
                continue;
            char name[256];
            size_t n = strcspn(*e, "=");
            snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) ? n : sizeof(name) - 1),
                     *e);
            unsetenv(name);
            again = 1;
            break;
        }
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: convoy-info [--parsable | --markdown] [--convoy-NAME=VALUE ...]\n"
               "       convoy-info --version | --help\n"
               "Lists the build, schedulers, devices, what devices=auto selects, the topology,\n"
               "where each thread would be bound, and every parameter (see convoy-info(1)).\n");
}

int main(int argc, char **argv)
{
    /* The --convoy-* options first (they are consumed); getopt sees the rest. */
    convoy__params_t params;
    if (convoy__params_load(&params, &argc, &argv) != CONVOY_SUCCESS) {
        fprintf(stderr, "convoy-info: %s\n", convoy_last_error(NULL));
        return 1;
    }
    enum { OPT_MARKDOWN = 256 };
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"parsable", no_argument, NULL, 'p'},
        {"markdown", no_argument, NULL, OPT_MARKDOWN},
        {NULL, 0, NULL, 0},
    };
    int markdown = 0, parsable = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "hVp", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            usage(stdout);
            convoy__params_free(&params);
            return 0;
        case 'V':
            printf("convoy-info (convoy) %s\n", PACKAGE_VERSION);
            convoy__params_free(&params);
            return 0;
        case 'p': parsable = 1; break;
        case OPT_MARKDOWN: markdown = 1; break;
        default:
            fprintf(stderr, "convoy-info: unknown option '%s'\n", argv[optind - 1]);
            usage(stderr);
            convoy__params_free(&params);
            return 2;
        }
    }
    if (optind < argc || (markdown && parsable)) {
        if (optind < argc)
            fprintf(stderr, "convoy-info: unexpected argument '%s'\n", argv[optind]);
        else
            fprintf(stderr, "convoy-info: --markdown and --parsable exclude each other\n");
        usage(stderr);
        convoy__params_free(&params);
        return 2;
    }
    if (check_names(&params) != CONVOY_SUCCESS) {
        fprintf(stderr, "convoy-info: %s\n", convoy_last_error(NULL));
        convoy__params_free(&params);
        return 1;
    }
    out_t o = {.parsable = parsable, .params = &params};
    if (markdown) {
        convoy__param_foreach_table(markdown_table, NULL);
        convoy__params_free(&params);
        return 0;
    }
    clear_convoy_env();
    if (!parsable)
        printf("convoy %s\n", PACKAGE_VERSION);
    print_build(parsable);
    print_components(&params, parsable);
    print_topology(parsable);
    print_binding(&params, parsable);
    if (!parsable)
        printf("parameters (current = defaults, then CONVOY_* variables, then options):\n");
    convoy__param_foreach_table(print_table, &o);
    convoy__params_free(&params);
    return 0;
}
