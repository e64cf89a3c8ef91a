/* test_support.c: scratch directories, file helpers, lines in order and the
 * suite runner. */
#include "test_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/status.h"

const char *fv_test_scratch_dir(void)
{
    static char directory[512];
    static pid_t owner;
    if (directory[0] != '\0' && owner == getpid())
        return directory;
    const char *base = getenv("FV_TEST_TMP");
    if (base == NULL || base[0] == '\0')
        base = "/tmp";
    mkdir(base, 0777);
    snprintf(directory, sizeof directory, "%s/fvtest-%d-XXXXXX", base, (int)getpid());
    if (mkdtemp(directory) == NULL) {
        fprintf(stderr, "cannot create a scratch directory under %s: %s\n", base, strerror(errno));
        abort();
    }
    owner = getpid();
    return directory;
}

const char *fv_test_path(const char *name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", fv_test_scratch_dir(), name);
    return path;
}

const char *fv_test_source_path(const char *relative)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", FV_SOURCE_DIR, relative);
    return path;
}

char *fv_test_read_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return NULL;
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *data = malloc((size_t)length + 1);
    if (data == NULL || fread(data, 1, (size_t)length, file) != (size_t)length) {
        free(data);
        fclose(file);
        return NULL;
    }
    data[length] = '\0';
    fclose(file);
    if (size)
        *size = (size_t)length;
    return data;
}

int fv_test_write_file(const char *path, const char *text)
{
    FILE *file = fopen(path, "wb");
    if (file == NULL)
        return -1;
    size_t length = strlen(text);
    int result = fwrite(text, 1, length, file) == length ? 0 : -1;
    return fclose(file) == 0 ? result : -1;
}

void fv_test_assert_lines_in_order(const char *code, const char *const *lines)
{
    const char *at = code;
    for (; *lines != NULL; lines++) {
        const char *found = strstr(at, *lines);
        ck_assert_msg(found != NULL, "missing or out of order: %s", *lines);
        at = found + strlen(*lines);
    }
}

int fv_test_count_occurrences(const char *text, const char *needle)
{
    int count = 0;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        count++;
    return count;
}

int fv_test_run_suite(Suite *suite)
{
    SRunner *runner = srunner_create(suite);
    srunner_set_fork_status(runner, CK_FORK);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
