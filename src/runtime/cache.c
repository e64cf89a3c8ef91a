/* cache.c: the on-disk kernel cache: keys, the checked entry format, atomic
 * publication by rename(2), and small text records. */
#include "runtime/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "common/sha256.h"

/* Entry layout (docs/runtime.md), integers little-endian:
 *   0  magic "FVCUBIN\0"          8  u32 format version   12 u32 kernel count
 *  16  u64 cubin bytes           24  u64 log bytes        32 u64 NVRTC microseconds
 *  40  u32 NVRTC major           44  u32 NVRTC minor      48 key, 64 hex digits
 * 112  SHA-256 of every byte of the file except these 32
 * 144  kernel records, each a NUL-padded name[256] and six i32: registers,
 *      barriers, local, spill stores, spill loads, static shared bytes
 *      then the log, then the cubin. */
enum {
    FORMAT_VERSION = 1,
    OFFSET_VERSION = 8,
    OFFSET_KERNEL_COUNT = 12,
    OFFSET_CUBIN_SIZE = 16,
    OFFSET_LOG_SIZE = 24,
    OFFSET_NVRTC_MICROSECONDS = 32,
    OFFSET_NVRTC_MAJOR = 40,
    OFFSET_NVRTC_MINOR = 44,
    OFFSET_KEY = 48,
    KEY_LENGTH = 64,
    OFFSET_CHECKSUM = 112,
    CHECKSUM_SIZE = 32,
    HEADER_SIZE = 144,
    RECORD_INTEGERS = 6,
    RECORD_SIZE = FV_RT_KERNEL_NAME_CAPACITY + 4 * RECORD_INTEGERS,
    MAX_KERNELS = 65536,
    MAX_TEXT_RECORD = 64 * 1024,
    MAX_RECORD_NAME = 200
};

static const char MAGIC[8] = {'F', 'V', 'C', 'U', 'B', 'I', 'N', '\0'};
static const uint64_t MAX_ENTRY_BYTES = UINT64_C(1) << 30;
static const char KEY_TAG[] = "fuservalidate kernel cache 1";

struct fv_rt_cache {
    char *directory;
};

/* ------------------------------------------------------------ directories */

fv_status fv_rt_cache_default_directory(char *path, size_t size)
{
    const char *explicit_directory = getenv("FV_KERNEL_CACHE");
    int length;
    if (explicit_directory != NULL && explicit_directory[0] != '\0') {
        length = snprintf(path, size, "%s", explicit_directory);
    } else {
        const char *home = getenv("HOME");
        if (home == NULL || home[0] == '\0')
            FV_FAIL(FV_ERR_NOT_FOUND,
                    "no kernel cache directory: neither FV_KERNEL_CACHE nor HOME is set");
        length = snprintf(path, size, "%s/.cache/fuservalidate/kernels", home);
    }
    if (length < 0 || (size_t)length >= size)
        FV_FAIL(FV_ERR_USAGE, "the kernel cache path is too long");
    return FV_OK;
}

/* mkdir -p */
static fv_status make_directories(const char *directory)
{
    char path[PATH_MAX];
    if (strlen(directory) >= sizeof path)
        FV_FAIL(FV_ERR_USAGE, "the kernel cache path is too long: %s", directory);
    strcpy(path, directory);
    for (char *slash = path + 1; *slash != '\0'; slash++) {
        if (*slash != '/')
            continue;
        *slash = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            FV_FAIL(FV_ERR_IO, "cannot create directory %s: %s", path, strerror(errno));
        *slash = '/';
    }
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        FV_FAIL(FV_ERR_IO, "cannot create directory %s: %s", path, strerror(errno));
    struct stat status;
    if (stat(path, &status) != 0 || !S_ISDIR(status.st_mode))
        FV_FAIL(FV_ERR_IO, "kernel cache %s is not a directory", path);
    if (access(path, W_OK | X_OK) != 0)
        FV_FAIL(FV_ERR_IO, "kernel cache %s is not writable: %s", path, strerror(errno));
    return FV_OK;
}

fv_status fv_rt_cache_open(const char *directory, fv_rt_cache **cache)
{
    *cache = NULL;
    char default_directory[PATH_MAX];
    if (directory == NULL) {
        FV_TRY(fv_rt_cache_default_directory(default_directory, sizeof default_directory));
        directory = default_directory;
    }
    FV_TRY(make_directories(directory));
    fv_rt_cache *opened = calloc(1, sizeof *opened);
    FV_CHECK_ALLOC(opened);
    opened->directory = strdup(directory);
    if (opened->directory == NULL) {
        free(opened);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    *cache = opened;
    return FV_OK;
}

void fv_rt_cache_close(fv_rt_cache *cache)
{
    if (cache == NULL)
        return;
    free(cache->directory);
    free(cache);
}

const char *fv_rt_cache_directory(const fv_rt_cache *cache) { return cache->directory; }

/* -------------------------------------------------------------------- keys */

static void hash_field(fv_sha256 *hash, const void *data, size_t size)
{
    uint8_t length[8];
    for (int i = 0; i < 8; i++)
        length[i] = (uint8_t)((uint64_t)size >> (8 * i));
    fv_sha256_update(hash, length, sizeof length);
    fv_sha256_update(hash, data, size);
}

void fv_rt_cache_key(const char *source, const char *const *options, size_t option_count,
                     const char *arch, int nvrtc_major, int nvrtc_minor,
                     char key[FV_RT_CACHE_KEY_CAPACITY])
{
    fv_sha256 hash;
    fv_sha256_init(&hash);
    hash_field(&hash, KEY_TAG, sizeof KEY_TAG - 1);
    hash_field(&hash, arch, strlen(arch));
    char version[32];
    int length = snprintf(version, sizeof version, "nvrtc %d.%d", nvrtc_major, nvrtc_minor);
    hash_field(&hash, version, (size_t)length);
    char count[32];
    length = snprintf(count, sizeof count, "%zu options", option_count);
    hash_field(&hash, count, (size_t)length);
    for (size_t i = 0; i < option_count; i++)
        hash_field(&hash, options[i], strlen(options[i]));
    hash_field(&hash, source, strlen(source));
    uint8_t digest[32];
    fv_sha256_final(&hash, digest);
    fv_sha256_hex(digest, key);
}

static bool valid_key(const char *key)
{
    if (key == NULL || strlen(key) != KEY_LENGTH)
        return false;
    for (int i = 0; i < KEY_LENGTH; i++)
        if (!((key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f')))
            return false;
    return true;
}

fv_status fv_rt_cache_entry_path(const fv_rt_cache *cache, const char *key, char *path,
                                 size_t size)
{
    if (!valid_key(key))
        FV_FAIL(FV_ERR_USAGE, "invalid kernel cache key \"%s\"", key ? key : "(null)");
    int length = snprintf(path, size, "%s/%s.cubin", cache->directory, key);
    if (length < 0 || (size_t)length >= size)
        FV_FAIL(FV_ERR_USAGE, "kernel cache path too long");
    return FV_OK;
}

/* ------------------------------------------------------ little-endian bytes */

static void put_u32(uint8_t *at, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        at[i] = (uint8_t)(value >> (8 * i));
}

static void put_u64(uint8_t *at, uint64_t value)
{
    for (int i = 0; i < 8; i++)
        at[i] = (uint8_t)(value >> (8 * i));
}

static uint32_t get_u32(const uint8_t *at)
{
    uint32_t value = 0;
    for (int i = 3; i >= 0; i--)
        value = (value << 8) | at[i];
    return value;
}

static uint64_t get_u64(const uint8_t *at)
{
    uint64_t value = 0;
    for (int i = 7; i >= 0; i--)
        value = (value << 8) | at[i];
    return value;
}

/* SHA-256 of the whole entry except its checksum field. */
static void entry_checksum(const uint8_t *entry, size_t size, uint8_t digest[32])
{
    fv_sha256 hash;
    fv_sha256_init(&hash);
    fv_sha256_update(&hash, entry, OFFSET_CHECKSUM);
    fv_sha256_update(&hash, entry + HEADER_SIZE, size - HEADER_SIZE);
    fv_sha256_final(&hash, digest);
}

/* ---------------------------------------------------------------- encoding */

static fv_status encode_entry(const char *key, const fv_rt_compiled *compiled, uint8_t **entry,
                              size_t *size)
{
    size_t log_size = compiled->log ? strlen(compiled->log) : 0;
    if (compiled->kernel_count > MAX_KERNELS)
        FV_FAIL(FV_ERR_USAGE, "too many kernels (%zu) for a cache entry", compiled->kernel_count);
    size_t total = HEADER_SIZE + compiled->kernel_count * RECORD_SIZE + log_size +
                   compiled->cubin_size;
    if (total > MAX_ENTRY_BYTES)
        FV_FAIL(FV_ERR_USAGE, "cache entry of %zu bytes is too large", total);
    uint8_t *bytes = calloc(total, 1);
    FV_CHECK_ALLOC(bytes);
    memcpy(bytes, MAGIC, sizeof MAGIC);
    put_u32(bytes + OFFSET_VERSION, FORMAT_VERSION);
    put_u32(bytes + OFFSET_KERNEL_COUNT, (uint32_t)compiled->kernel_count);
    put_u64(bytes + OFFSET_CUBIN_SIZE, compiled->cubin_size);
    put_u64(bytes + OFFSET_LOG_SIZE, log_size);
    double microseconds = compiled->nvrtc_ms > 0 ? compiled->nvrtc_ms * 1e3 : 0;
    put_u64(bytes + OFFSET_NVRTC_MICROSECONDS, (uint64_t)microseconds);
    put_u32(bytes + OFFSET_NVRTC_MAJOR, (uint32_t)compiled->nvrtc_major);
    put_u32(bytes + OFFSET_NVRTC_MINOR, (uint32_t)compiled->nvrtc_minor);
    memcpy(bytes + OFFSET_KEY, key, KEY_LENGTH);
    uint8_t *at = bytes + HEADER_SIZE;
    for (size_t i = 0; i < compiled->kernel_count; i++, at += RECORD_SIZE) {
        const fv_rt_kernel_resources *kernel = &compiled->kernels[i];
        strncpy((char *)at, kernel->name, FV_RT_KERNEL_NAME_CAPACITY - 1);
        const int values[RECORD_INTEGERS] = {
            kernel->registers,         kernel->barriers,         kernel->local_bytes,
            kernel->spill_store_bytes, kernel->spill_load_bytes, kernel->static_shared_bytes};
        for (int v = 0; v < RECORD_INTEGERS; v++)
            put_u32(at + FV_RT_KERNEL_NAME_CAPACITY + 4 * v, (uint32_t)values[v]);
    }
    if (log_size > 0)
        memcpy(at, compiled->log, log_size);
    memcpy(at + log_size, compiled->cubin, compiled->cubin_size);
    entry_checksum(bytes, total, bytes + OFFSET_CHECKSUM);
    *entry = bytes;
    *size = total;
    return FV_OK;
}

/* Checks everything about an entry that can be checked without decoding it.
 * Returns NULL if it is sound, or what is wrong with it. */
static const char *entry_problem(const uint8_t *entry, size_t size, const char *key)
{
    if (size < HEADER_SIZE)
        return "truncated header";
    if (memcmp(entry, MAGIC, sizeof MAGIC) != 0)
        return "bad magic";
    if (get_u32(entry + OFFSET_VERSION) != FORMAT_VERSION)
        return "unknown format version";
    if (memcmp(entry + OFFSET_KEY, key, KEY_LENGTH) != 0)
        return "key in the header does not match the file name";
    uint64_t kernels = get_u32(entry + OFFSET_KERNEL_COUNT);
    uint64_t cubin = get_u64(entry + OFFSET_CUBIN_SIZE);
    uint64_t log = get_u64(entry + OFFSET_LOG_SIZE);
    if (kernels > MAX_KERNELS || cubin > MAX_ENTRY_BYTES || log > MAX_ENTRY_BYTES)
        return "implausible sizes in the header";
    uint64_t expected = HEADER_SIZE + kernels * RECORD_SIZE + log + cubin;
    if (expected != size)
        return expected > size ? "truncated" : "trailing bytes";
    uint8_t digest[32];
    entry_checksum(entry, size, digest);
    if (memcmp(digest, entry + OFFSET_CHECKSUM, CHECKSUM_SIZE) != 0)
        return "checksum mismatch";
    if (cubin < 4 || memcmp(entry + size - cubin, "\177ELF", 4) != 0)
        return "payload is not an ELF cubin";
    const uint8_t *record = entry + HEADER_SIZE;
    for (uint64_t i = 0; i < kernels; i++, record += RECORD_SIZE)
        if (record[0] == '\0' || memchr(record, '\0', FV_RT_KERNEL_NAME_CAPACITY) == NULL)
            return "malformed kernel name";
    return NULL;
}

/* Decodes a sound entry into `compiled`. */
static fv_status decode_entry(const uint8_t *entry, size_t size, fv_rt_compiled *compiled)
{
    size_t kernels = get_u32(entry + OFFSET_KERNEL_COUNT);
    size_t cubin = (size_t)get_u64(entry + OFFSET_CUBIN_SIZE);
    size_t log = (size_t)get_u64(entry + OFFSET_LOG_SIZE);
    fv_rt_kernel_resources *records = calloc(kernels ? kernels : 1, sizeof *records);
    char *log_text = malloc(log + 1);
    uint8_t *image = malloc(cubin);
    if (records == NULL || log_text == NULL || image == NULL) {
        free(records);
        free(log_text);
        free(image);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    const uint8_t *at = entry + HEADER_SIZE;
    for (size_t i = 0; i < kernels; i++, at += RECORD_SIZE) {
        memcpy(records[i].name, at, FV_RT_KERNEL_NAME_CAPACITY);
        int *values[RECORD_INTEGERS] = {
            &records[i].registers,         &records[i].barriers,
            &records[i].local_bytes,       &records[i].spill_store_bytes,
            &records[i].spill_load_bytes,  &records[i].static_shared_bytes};
        for (int v = 0; v < RECORD_INTEGERS; v++)
            *values[v] = (int)get_u32(at + FV_RT_KERNEL_NAME_CAPACITY + 4 * v);
    }
    memcpy(log_text, at, log);
    log_text[log] = '\0';
    memcpy(image, entry + size - cubin, cubin);
    compiled->kernels = records;
    compiled->kernel_count = kernels;
    compiled->log = log_text;
    compiled->cubin = image;
    compiled->cubin_size = cubin;
    compiled->nvrtc_ms = (double)get_u64(entry + OFFSET_NVRTC_MICROSECONDS) / 1e3;
    compiled->nvrtc_major = (int)get_u32(entry + OFFSET_NVRTC_MAJOR);
    compiled->nvrtc_minor = (int)get_u32(entry + OFFSET_NVRTC_MINOR);
    return FV_OK;
}

/* ------------------------------------------------------------------- files */

/* Reads a whole file of at most `limit` bytes.  Returns 0, or an errno value
 * (ENOENT for no file, EFBIG for one over the limit); `*identity` receives
 * the file's device and inode. */
static int read_file(const char *path, uint64_t limit, uint8_t **data, size_t *size,
                     struct stat *identity)
{
    *data = NULL;
    *size = 0;
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0)
        return errno;
    int error = 0;
    if (fstat(descriptor, identity) != 0) {
        error = errno;
    } else if ((uint64_t)identity->st_size > limit) {
        error = EFBIG;
    } else {
        size_t length = (size_t)identity->st_size;
        uint8_t *bytes = malloc(length ? length : 1);
        size_t done = 0;
        if (bytes == NULL)
            error = ENOMEM;
        while (error == 0 && done < length) {
            ssize_t got = read(descriptor, bytes + done, length - done);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0)
                error = errno;
            else if (got == 0)
                break; /* shrank while reading: the caller sees a short entry */
            else
                done += (size_t)got;
        }
        if (error == 0) {
            *data = bytes;
            *size = done;
        } else {
            free(bytes);
        }
    }
    close(descriptor);
    return error;
}

/* Writes `data` as the cache entry `name`: readers see the old file or the
 * new one. */
static fv_status publish(const fv_rt_cache *cache, const char *name, const void *data,
                         size_t size)
{
    char final_path[PATH_MAX];
    int length = snprintf(final_path, sizeof final_path, "%s/%s", cache->directory, name);
    if (length < 0 || (size_t)length >= sizeof final_path)
        FV_FAIL(FV_ERR_USAGE, "kernel cache path too long");
    return fv_file_write_atomic(final_path, data, size);
}

/* ------------------------------------------------------------------ entries */

static void note_problem(fv_rt_compiled *compiled, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static void note_problem(fv_rt_compiled *compiled, const char *format, ...)
{
    size_t used = strlen(compiled->cache_problem);
    size_t size = sizeof compiled->cache_problem;
    if (used > 0 && used + 2 < size) {
        memcpy(compiled->cache_problem + used, "; ", 3);
        used += 2;
    }
    va_list args;
    va_start(args, format);
    vsnprintf(compiled->cache_problem + used, size - used, format, args);
    va_end(args);
}

/* Deletes a rejected entry unless another process has replaced it since we
 * read it (then the new file is left alone). */
static void remove_entry(const char *path, const struct stat *read_identity,
                         fv_rt_compiled *compiled)
{
    struct stat current;
    if (stat(path, &current) != 0 || current.st_dev != read_identity->st_dev ||
        current.st_ino != read_identity->st_ino)
        return;
    if (unlink(path) != 0 && errno != ENOENT)
        note_problem(compiled, "cannot delete %s: %s", path, strerror(errno));
}

fv_status fv_rt_cache_load(fv_rt_cache *cache, const char *key, fv_rt_compiled *compiled,
                           bool *found)
{
    *found = false;
    char path[PATH_MAX];
    if (fv_rt_cache_entry_path(cache, key, path, sizeof path) != FV_OK) {
        note_problem(compiled, "cannot look up the cache: %s", fv_error_message());
        fv_error_clear();
        return FV_OK;
    }
    uint8_t *entry = NULL;
    size_t size = 0;
    struct stat identity;
    int error = read_file(path, MAX_ENTRY_BYTES, &entry, &size, &identity);
    if (error == ENOENT)
        return FV_OK;
    if (error == ENOMEM)
        FV_FAIL(FV_ERR_NOMEM, "out of memory reading %s", path);
    if (error != 0 && error != EFBIG) {
        note_problem(compiled, "cannot read cache entry %s: %s", path, strerror(error));
        return FV_OK;
    }
    const char *problem = error == EFBIG ? "implausibly large" : entry_problem(entry, size, key);
    if (problem != NULL) {
        free(entry);
        note_problem(compiled, "rejected corrupt cache entry %s: %s", path, problem);
        compiled->cache_rejected = true;
        remove_entry(path, &identity, compiled);
        return FV_OK;
    }
    fv_status status = decode_entry(entry, size, compiled);
    free(entry);
    FV_TRY(status);
    *found = true;
    return FV_OK;
}

fv_status fv_rt_cache_store(fv_rt_cache *cache, const char *key,
                            const fv_rt_compiled *compiled)
{
    if (!valid_key(key))
        FV_FAIL(FV_ERR_USAGE, "invalid kernel cache key");
    uint8_t *entry = NULL;
    size_t size = 0;
    FV_TRY(encode_entry(key, compiled, &entry, &size));
    char name[KEY_LENGTH + 16];
    snprintf(name, sizeof name, "%s.cubin", key);
    fv_status status = publish(cache, name, entry, size);
    free(entry);
    FV_TRY(status);
    return FV_OK;
}

/* ------------------------------------------------------------ text records */

static fv_status check_record_name(const char *name)
{
    size_t length = name ? strlen(name) : 0;
    if (length == 0 || length > MAX_RECORD_NAME || name[0] == '.')
        FV_FAIL(FV_ERR_USAGE, "invalid cache record name \"%s\"", name ? name : "(null)");
    for (size_t i = 0; i < length; i++) {
        char c = name[i];
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '_' || c == '.';
        if (!plain)
            FV_FAIL(FV_ERR_USAGE, "invalid cache record name \"%s\"", name);
    }
    return FV_OK;
}

fv_status fv_rt_cache_read_text(const fv_rt_cache *cache, const char *name, char **text)
{
    *text = NULL;
    FV_TRY(check_record_name(name));
    char path[PATH_MAX];
    int length = snprintf(path, sizeof path, "%s/%s", cache->directory, name);
    if (length < 0 || (size_t)length >= sizeof path)
        FV_FAIL(FV_ERR_USAGE, "cache record path too long");
    uint8_t *data = NULL;
    size_t size = 0;
    struct stat identity;
    int error = read_file(path, MAX_TEXT_RECORD, &data, &size, &identity);
    if (error == ENOENT || error == EFBIG)
        return FV_OK;
    if (error != 0)
        FV_FAIL(error == ENOMEM ? FV_ERR_NOMEM : FV_ERR_IO, "cannot read %s: %s", path,
                strerror(error));
    char *result = malloc(size + 1);
    if (result == NULL) {
        free(data);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    memcpy(result, data, size);
    result[size] = '\0';
    free(data);
    *text = result;
    return FV_OK;
}

fv_status fv_rt_cache_write_text(const fv_rt_cache *cache, const char *name, const char *text)
{
    FV_TRY(check_record_name(name));
    FV_TRY(publish(cache, name, text, strlen(text)));
    return FV_OK;
}
