/* nvrtc.c: NVRTC compilation to cubin through the kernel cache, the CUDA
 * include directory, and the reader of ptxas's resource report. */
#include "runtime/nvrtc.h"

#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/text.h"
#include "runtime/cache.h"

enum {
    OWN_OPTION_COUNT = 7,     /* options fv_rt_compile passes itself (at most) */
    ARCH_CAPACITY = 32,
    LINE_CAPACITY = 1024,     /* longer log lines are read truncated */
    SUMMARY_CAPACITY = 1024,  /* error lines quoted in a failure message */
    SUMMARY_LINES = 3,
    TRIED_CAPACITY = 2048
};

static const char DEFAULT_PROGRAM_NAME[] = "kernel.cu";
static const char PROBE_HEADER[] = "cuda_bf16.h";

static double now_ms(void)
{
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec * 1e3 + (double)time.tv_nsec / 1e6;
}

fv_status fv_rt_nvrtc_version(int *major, int *minor)
{
    nvrtcResult result = nvrtcVersion(major, minor);
    if (result != NVRTC_SUCCESS)
        FV_FAIL(FV_ERR_NVRTC, "nvrtcVersion failed: %s", nvrtcGetErrorString(result));
    return FV_OK;
}

/* ------------------------------------------------------- include directory */

static pthread_once_t include_once = PTHREAD_ONCE_INIT;
static char include_directory[PATH_MAX];   /* "" when none was found */
static char cccl_directory[PATH_MAX];      /* "" when the toolkit has none */
static char include_tried[TRIED_CAPACITY]; /* the candidates, for the error message */

static bool is_directory(const char *path)
{
    struct stat status;
    return stat(path, &status) == 0 && S_ISDIR(status.st_mode);
}

/* Takes `directory` if it holds the CUDA headers NVRTC needs. */
static bool try_include_candidate(const char *directory)
{
    if (directory == NULL || directory[0] == '\0')
        return false;
    size_t used = strlen(include_tried);
    snprintf(include_tried + used, sizeof include_tried - used, "%s%s", used ? ", " : "",
             directory);
    char probe[PATH_MAX + sizeof PROBE_HEADER + 1];
    int length = snprintf(probe, sizeof probe, "%s/%s", directory, PROBE_HEADER);
    if (length < 0 || (size_t)length >= sizeof probe || access(probe, R_OK) != 0)
        return false;
    if (strlen(directory) >= sizeof include_directory)
        return false;
    strcpy(include_directory, directory);
    length = snprintf(cccl_directory, sizeof cccl_directory, "%s/cccl", directory);
    if (length < 0 || (size_t)length >= sizeof cccl_directory || !is_directory(cccl_directory))
        cccl_directory[0] = '\0';
    return true;
}

/* "<prefix>/include" for an environment variable naming a toolkit root. */
static bool try_toolkit_root(const char *variable)
{
    const char *root = getenv(variable);
    if (root == NULL || root[0] == '\0')
        return false;
    char directory[PATH_MAX];
    int length = snprintf(directory, sizeof directory, "%s/include", root);
    return length > 0 && (size_t)length < sizeof directory && try_include_candidate(directory);
}

/* The include/ directory of the toolkit whose libnvrtc this process loaded:
 * <toolkit>/lib/libnvrtc.so.N (lib64 and targets/<arch>/lib alike) ->
 * <toolkit>/include. */
static bool try_beside_nvrtc(void)
{
    Dl_info library;
    if (dladdr((void *)nvrtcVersion, &library) == 0 || library.dli_fname == NULL)
        return false;
    char resolved[PATH_MAX];
    if (realpath(library.dli_fname, resolved) == NULL)
        return false;
    char *slash = strrchr(resolved, '/');
    if (slash == NULL)
        return false;
    *slash = '\0';
    char candidate[PATH_MAX];
    int length = snprintf(candidate, sizeof candidate, "%s/../include", resolved);
    if (length < 0 || (size_t)length >= sizeof candidate ||
        realpath(candidate, resolved) == NULL)
        return false;
    return try_include_candidate(resolved);
}

static void find_include_directory(void)
{
    if (try_include_candidate(getenv("FV_CUDA_INCLUDE")))
        return;
    if (try_beside_nvrtc())
        return;
    if (try_toolkit_root("CUDA_HOME") || try_toolkit_root("CUDA_PATH"))
        return;
    if (try_include_candidate("/usr/local/cuda/include"))
        return;
    include_directory[0] = '\0';
}

fv_status fv_rt_nvrtc_include_dir(const char **directory)
{
    *directory = NULL;
    if (pthread_once(&include_once, find_include_directory) != 0)
        FV_FAIL(FV_ERR_INTERNAL, "pthread_once failed");
    if (include_directory[0] == '\0')
        FV_FAIL(FV_ERR_NOT_FOUND,
                "cannot find the CUDA headers for NVRTC (%s) in: %s; set FV_CUDA_INCLUDE or "
                "CUDA_HOME",
                PROBE_HEADER, include_tried[0] ? include_tried : "(no candidate)");
    *directory = include_directory;
    return FV_OK;
}

/* ------------------------------------------------------------- the request */

static bool valid_arch(const char *arch)
{
    if (arch == NULL || strncmp(arch, "sm_", 3) != 0 || strlen(arch) >= ARCH_CAPACITY ||
        !isdigit((unsigned char)arch[3]))
        return false;
    for (const char *c = arch + 3; *c != '\0'; c++)
        if (!isdigit((unsigned char)*c) && !islower((unsigned char)*c))
            return false;
    return true;
}

static fv_status check_request(const fv_rt_compile_request *request)
{
    if (request->source == NULL)
        FV_FAIL(FV_ERR_USAGE, "compile request without source");
    if (request->kernel_count == 0 || request->kernel_names == NULL)
        FV_FAIL(FV_ERR_USAGE, "compile request names no kernel");
    for (size_t i = 0; i < request->kernel_count; i++) {
        const char *name = request->kernel_names[i];
        if (name == NULL || name[0] == '\0' || strlen(name) >= FV_RT_KERNEL_NAME_CAPACITY)
            FV_FAIL(FV_ERR_USAGE, "compile request: kernel name %zu is empty or too long", i);
    }
    if (request->option_count > 0 && request->options == NULL)
        FV_FAIL(FV_ERR_USAGE, "compile request: %zu options but no option array",
                request->option_count);
    for (size_t i = 0; i < request->option_count; i++)
        if (request->options[i] == NULL)
            FV_FAIL(FV_ERR_USAGE, "compile request: option %zu is NULL", i);
    if (!valid_arch(request->arch))
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "target \"%s\": a cubin needs a real architecture such as sm_90a or sm_100a",
                request->arch ? request->arch : "(none)");
    return FV_OK;
}

/* "a, b" for messages. */
static void kernel_list(const fv_rt_compile_request *request, char *text, size_t size)
{
    size_t used = 0;
    text[0] = '\0';
    for (size_t i = 0; i < request->kernel_count && used < size; i++) {
        int length = snprintf(text + used, size - used, "%s%s", i ? ", " : "",
                              request->kernel_names[i]);
        if (length < 0)
            break;
        used += (size_t)length;
    }
}

/* ------------------------------------------------------------- the options */

typedef struct option_list {
    char arch[ARCH_CAPACITY + 32];
    char include[PATH_MAX + 32];
    char cccl[PATH_MAX + 32];
    const char **items;   /* ours, then the request's */
    size_t count;
} option_list;

/* NVRTC 12.9 and newer keep their own cache of compiled programs in the
 * CUDA driver's compute cache (so only where a driver is installed), and a
 * program served from it comes with an empty ptxas log: no resources.  We
 * have our own cache, so NVRTC's is turned off. */
static bool has_own_cache(int nvrtc_major, int nvrtc_minor)
{
    return nvrtc_major > 12 || (nvrtc_major == 12 && nvrtc_minor >= 9);
}

static fv_status build_options(const fv_rt_compile_request *request, int nvrtc_major,
                               int nvrtc_minor, option_list *options)
{
    const char *directory;
    FV_TRY(fv_rt_nvrtc_include_dir(&directory));
    snprintf(options->arch, sizeof options->arch, "--gpu-architecture=%s", request->arch);
    snprintf(options->include, sizeof options->include, "--include-path=%s", directory);
    snprintf(options->cccl, sizeof options->cccl, "--include-path=%s", cccl_directory);
    options->items = calloc(OWN_OPTION_COUNT + request->option_count, sizeof *options->items);
    FV_CHECK_ALLOC(options->items);
    size_t count = 0;
    options->items[count++] = options->arch;
    options->items[count++] = "-default-device";
    options->items[count++] = "-std=c++17";
    options->items[count++] = "--ptxas-options=-v";
    if (has_own_cache(nvrtc_major, nvrtc_minor))
        options->items[count++] = "--no-cache";
    options->items[count++] = options->include;
    if (cccl_directory[0] != '\0')
        options->items[count++] = options->cccl;
    for (size_t i = 0; i < request->option_count; i++)
        options->items[count++] = request->options[i];
    options->count = count;
    return FV_OK;
}

/* ------------------------------------------------------------------ NVRTC */

/* Copies the next line of `*cursor` into `line` (truncated to fit, without the
 * newline or a trailing '\r') and advances; false at the end of `text`. */
static bool next_line(const char **cursor, char *line, size_t size)
{
    const char *start = *cursor;
    if (*start == '\0')
        return false;
    const char *end = strchr(start, '\n');
    size_t length = end ? (size_t)(end - start) : strlen(start);
    *cursor = end ? end + 1 : start + length;
    size_t copied = length < size - 1 ? length : size - 1;
    memcpy(line, start, copied);
    line[copied] = '\0';
    if (copied > 0 && line[copied - 1] == '\r')
        line[copied - 1] = '\0';
    return true;
}

/* Up to SUMMARY_LINES lines of the log joined with " | ": those that report
 * an error if `errors_first` and some do, else the first non-empty ones. */
static void summarize(const char *log, bool errors_first, char *summary, size_t size)
{
    char line[LINE_CAPACITY];
    size_t used = 0;
    int taken = 0;
    summary[0] = '\0';
    for (int pass = errors_first ? 0 : 1; pass < 2 && taken == 0; pass++) {
        const char *cursor = log ? log : "";
        while (taken < SUMMARY_LINES && next_line(&cursor, line, sizeof line)) {
            bool wanted = pass == 0 ? strstr(line, "error") != NULL : line[0] != '\0';
            if (!wanted || used >= size)
                continue;
            int length = snprintf(summary + used, size - used, "%s%s", taken ? " | " : "", line);
            if (length > 0)
                used += (size_t)length;
            taken++;
        }
    }
    if (taken == 0)
        snprintf(summary, size, "(empty log)");
}

static void summarize_errors(const char *log, char *summary, size_t size)
{
    summarize(log, true, summary, size);
}

static void summarize_log(const char *log, char *summary, size_t size)
{
    summarize(log, false, summary, size);
}

static fv_status take_log(nvrtcProgram program, char **log)
{
    size_t size = 0;
    nvrtcResult result = nvrtcGetProgramLogSize(program, &size);
    if (result != NVRTC_SUCCESS)
        FV_FAIL(FV_ERR_NVRTC, "nvrtcGetProgramLogSize failed: %s", nvrtcGetErrorString(result));
    *log = calloc(size + 1, 1);
    FV_CHECK_ALLOC(*log);
    if (size > 0) {
        result = nvrtcGetProgramLog(program, *log);
        if (result != NVRTC_SUCCESS)
            FV_FAIL(FV_ERR_NVRTC, "nvrtcGetProgramLog failed: %s", nvrtcGetErrorString(result));
    }
    return FV_OK;
}

static fv_status take_cubin(nvrtcProgram program, const char *name, fv_rt_compiled *out)
{
    size_t size = 0;
    nvrtcResult result = nvrtcGetCUBINSize(program, &size);
    if (result != NVRTC_SUCCESS)
        FV_FAIL(FV_ERR_NVRTC, "nvrtcGetCUBINSize failed for %s: %s", name,
                nvrtcGetErrorString(result));
    if (size == 0)
        FV_FAIL(FV_ERR_NVRTC, "NVRTC produced no cubin for %s", name);
    out->cubin = malloc(size);
    FV_CHECK_ALLOC(out->cubin);
    result = nvrtcGetCUBIN(program, (char *)out->cubin);
    if (result != NVRTC_SUCCESS)
        FV_FAIL(FV_ERR_NVRTC, "nvrtcGetCUBIN failed for %s: %s", name,
                nvrtcGetErrorString(result));
    out->cubin_size = size;
    return FV_OK;
}

static fv_status compile_failure(const fv_rt_compile_request *request, const char *name,
                                 nvrtcResult result, const char *log)
{
    char kernels[512];
    char summary[SUMMARY_CAPACITY];
    kernel_list(request, kernels, sizeof kernels);
    summarize_errors(log, summary, sizeof summary);
    FV_FAIL(FV_ERR_NVRTC, "NVRTC could not compile %s (kernel %s) for %s: %s: %s", name,
            kernels, request->arch, nvrtcGetErrorString(result), summary);
}

static fv_status run_nvrtc(const fv_rt_compile_request *request, const option_list *options,
                           fv_rt_compiled *out)
{
    const char *name = request->program_name ? request->program_name : DEFAULT_PROGRAM_NAME;
    double start = now_ms();
    nvrtcProgram program = NULL;
    nvrtcResult result = nvrtcCreateProgram(&program, request->source, name, 0, NULL, NULL);
    if (result != NVRTC_SUCCESS)
        FV_FAIL(FV_ERR_NVRTC, "cannot create the NVRTC program %s: %s", name,
                nvrtcGetErrorString(result));
    fv_status status = FV_OK;
    nvrtcResult compiled = nvrtcCompileProgram(program, (int)options->count, options->items);
    FV_TRY_GOTO(status, take_log(program, &out->log), done);
    if (compiled != NVRTC_SUCCESS) {
        status = compile_failure(request, name, compiled, out->log);
        goto done;
    }
    FV_TRY_GOTO(status, take_cubin(program, name, out), done);
    out->nvrtc_ms = now_ms() - start;
done:
    result = nvrtcDestroyProgram(&program);
    if (result != NVRTC_SUCCESS && status == FV_OK)
        FV_FAIL(FV_ERR_NVRTC, "nvrtcDestroyProgram failed: %s", nvrtcGetErrorString(result));
    return status;
}

/* Every requested kernel must be an entry with a complete report. */
static fv_status check_kernels(const fv_rt_compile_request *request, const fv_rt_compiled *out)
{
    for (size_t i = 0; i < request->kernel_count; i++) {
        const char *name = request->kernel_names[i];
        const fv_rt_kernel_resources *kernel = fv_rt_compiled_kernel(out, name);
        if (kernel == NULL) {
            char summary[SUMMARY_CAPACITY];
            summarize_log(out->log, summary, sizeof summary);
            FV_FAIL(FV_ERR_NOT_FOUND,
                    "kernel %s is not an entry function of %s (is it extern \"C\" "
                    "__global__?); ptxas reported %zu entries%s: %s",
                    name, request->program_name ? request->program_name : DEFAULT_PROGRAM_NAME,
                    out->kernel_count, out->cache_hit ? " (cached)" : "", summary);
        }
        if (kernel->registers < 0 || kernel->local_bytes < 0 || kernel->spill_store_bytes < 0 ||
            kernel->spill_load_bytes < 0)
            FV_FAIL(FV_ERR_INTERNAL,
                    "ptxas reported no complete resource usage for kernel %s (registers %d, "
                    "stack frame %d): has the format of its -v report changed?",
                    name, kernel->registers, kernel->local_bytes);
    }
    return FV_OK;
}

static void note_store_failure(fv_rt_compiled *out)
{
    size_t used = strlen(out->cache_problem);
    snprintf(out->cache_problem + used, sizeof out->cache_problem - used,
             "%scannot store the cache entry: %s", used ? "; " : "", fv_error_message());
    fv_error_clear();
}

static fv_status compile_or_load(const fv_rt_compile_request *request,
                                 const option_list *options, fv_rt_compiled *out)
{
    bool found = false;
    if (request->cache != NULL) {
        fv_rt_cache_key(request->source, options->items, options->count, request->arch,
                        out->nvrtc_major, out->nvrtc_minor, out->cache_key);
        FV_TRY(fv_rt_cache_load(request->cache, out->cache_key, out, &found));
    }
    if (found) {
        out->cache_hit = true;
        FV_TRY(check_kernels(request, out));
        return FV_OK;
    }
    FV_TRY(run_nvrtc(request, options, out));
    FV_TRY(fv_rt_parse_ptxas_log(out->log, &out->kernels, &out->kernel_count));
    FV_TRY(check_kernels(request, out));
    if (request->cache != NULL && fv_rt_cache_store(request->cache, out->cache_key, out) != FV_OK)
        note_store_failure(out);
    return FV_OK;
}

fv_status fv_rt_compile(const fv_rt_compile_request *request, fv_rt_compiled *out)
{
    memset(out, 0, sizeof *out);
    double start = now_ms();
    FV_TRY(check_request(request));
    FV_TRY(fv_rt_nvrtc_version(&out->nvrtc_major, &out->nvrtc_minor));
    option_list options = {0};
    FV_TRY(build_options(request, out->nvrtc_major, out->nvrtc_minor, &options));
    fv_status status = compile_or_load(request, &options, out);
    free(options.items);
    if (status != FV_OK) {
        char *log = out->log;
        out->log = NULL;
        fv_rt_compiled_free(out);
        out->log = log;
        fv_error_trace(__FILE__, __LINE__);
        return status;
    }
    out->compile_ms = now_ms() - start;
    return FV_OK;
}

const fv_rt_kernel_resources *fv_rt_compiled_kernel(const fv_rt_compiled *compiled,
                                                    const char *name)
{
    for (size_t i = 0; i < compiled->kernel_count; i++)
        if (strcmp(compiled->kernels[i].name, name) == 0)
            return &compiled->kernels[i];
    return NULL;
}

void fv_rt_compiled_free(fv_rt_compiled *compiled)
{
    free(compiled->cubin);
    free(compiled->kernels);
    free(compiled->log);
    memset(compiled, 0, sizeof *compiled);
}

/* ------------------------------------------------------ the ptxas report */

typedef struct report_reader {
    fv_rt_kernel_resources *kernels;
    size_t count;
    size_t capacity;
    long current;     /* entry whose "Used ..." line comes next, or -1 */
    long properties;  /* entry whose stack-frame line comes next, or -1 */
} report_reader;

static long find_entry(const report_reader *reader, const char *name)
{
    for (size_t i = 0; i < reader->count; i++)
        if (strcmp(reader->kernels[i].name, name) == 0)
            return (long)i;
    return -1;
}

static fv_status add_entry(report_reader *reader, const char *name, long *index)
{
    *index = find_entry(reader, name);
    if (*index >= 0)
        return FV_OK;
    if (reader->count == reader->capacity) {
        size_t capacity = reader->capacity ? 2 * reader->capacity : 8;
        fv_rt_kernel_resources *grown = realloc(reader->kernels, capacity * sizeof *grown);
        FV_CHECK_ALLOC(grown);
        reader->kernels = grown;
        reader->capacity = capacity;
    }
    fv_rt_kernel_resources *kernel = &reader->kernels[reader->count];
    memset(kernel, 0, sizeof *kernel);
    strcpy(kernel->name, name);
    kernel->registers = -1;
    kernel->local_bytes = -1;
    kernel->spill_store_bytes = -1;
    kernel->spill_load_bytes = -1;
    /* ptxas leaves out "N bytes smem" when there is none */
    *index = (long)reader->count++;
    return FV_OK;
}

/* The name after `marker`, up to `terminator` (or the end of the line when
 * `terminator` is NUL, trailing blanks removed); false if absent, empty or
 * too long for a kernel name. */
static bool name_after(const char *line, const char *marker, char terminator,
                       char name[FV_RT_KERNEL_NAME_CAPACITY])
{
    const char *start = strstr(line, marker);
    if (start == NULL)
        return false;
    start += strlen(marker);
    const char *end = terminator ? strchr(start, terminator) : start + strlen(start);
    if (end == NULL)
        return false;
    while (end > start && isspace((unsigned char)end[-1]))
        end--;
    size_t length = (size_t)(end - start);
    if (length == 0 || length >= FV_RT_KERNEL_NAME_CAPACITY)
        return false;
    memcpy(name, start, length);
    name[length] = '\0';
    return true;
}

/* The decimal number written just before `label` in `line` ("14" for
 * " registers" in "Used 14 registers"), or -1 if there is none.  Values past
 * INT_MAX read as INT_MAX. */
static int number_before(const char *line, const char *label)
{
    const char *at = strstr(line, label);
    if (at == NULL)
        return -1;
    const char *digits = at;
    while (digits > line && isdigit((unsigned char)digits[-1]))
        digits--;
    if (digits == at)
        return -1;
    long long value = 0;
    for (const char *c = digits; c < at; c++) {
        value = value * 10 + (*c - '0');
        if (value > INT_MAX)
            return INT_MAX;
    }
    return (int)value;
}

static void read_stack_line(report_reader *reader, const char *line)
{
    if (reader->properties < 0)
        return; /* a device function's properties */
    fv_rt_kernel_resources *kernel = &reader->kernels[reader->properties];
    kernel->local_bytes = number_before(line, " bytes stack frame");
    kernel->spill_store_bytes = number_before(line, " bytes spill stores");
    kernel->spill_load_bytes = number_before(line, " bytes spill loads");
    reader->properties = -1;
}

static void read_usage_line(report_reader *reader, const char *line)
{
    if (reader->current < 0)
        return;
    fv_rt_kernel_resources *kernel = &reader->kernels[reader->current];
    kernel->registers = number_before(line, " registers");
    int barriers = number_before(line, " barriers");
    int shared = number_before(line, " bytes smem");
    kernel->barriers = barriers > 0 ? barriers : 0;
    kernel->static_shared_bytes = shared > 0 ? shared : 0;
}

static fv_status read_report_line(report_reader *reader, const char *line)
{
    char name[FV_RT_KERNEL_NAME_CAPACITY];
    if (strstr(line, "Compiling entry function '") != NULL) {
        reader->current = -1;
        reader->properties = -1;
        if (name_after(line, "Compiling entry function '", '\'', name))
            FV_TRY(add_entry(reader, name, &reader->current));
    } else if (strstr(line, "Function properties for ") != NULL) {
        reader->properties = name_after(line, "Function properties for ", '\0', name)
                                  ? find_entry(reader, name)
                                  : -1;
    } else if (strstr(line, " bytes stack frame") != NULL) {
        read_stack_line(reader, line);
    } else if (strstr(line, ": Used ") != NULL) {
        read_usage_line(reader, line);
    }
    return FV_OK;
}

fv_status fv_rt_parse_ptxas_log(const char *log, fv_rt_kernel_resources **kernels,
                                size_t *count)
{
    *kernels = NULL;
    *count = 0;
    report_reader reader = {.current = -1, .properties = -1};
    char line[LINE_CAPACITY];
    const char *cursor = log ? log : "";
    while (next_line(&cursor, line, sizeof line)) {
        fv_status status = read_report_line(&reader, line);
        if (status != FV_OK) {
            free(reader.kernels);
            FV_TRY(status);
        }
    }
    *kernels = reader.kernels;
    *count = reader.count;
    return FV_OK;
}
