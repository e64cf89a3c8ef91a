/* test_support.h: helpers shared by the check suites: a scratch directory per
 * test process, file reading, lines in order in generated code, and the
 * standard suite runner. */
#ifndef FV_TEST_SUPPORT_H
#define FV_TEST_SUPPORT_H

#include <check.h>
#include <stddef.h>

/* A fresh empty directory for this process under $FV_TEST_TMP (or /tmp);
 * the same path on every call within one process.  Aborts the test on
 * failure. */
const char *fv_test_scratch_dir(void);

/* Joins the scratch dir and `name` into a static buffer (valid until the next
 * call). */
const char *fv_test_path(const char *name);

/* Path of a file in the source tree (FV_SOURCE_DIR/relative). */
const char *fv_test_source_path(const char *relative);

/* Reads a whole file (NUL-terminated, caller frees), or NULL. */
char *fv_test_read_file(const char *path, size_t *size);

/* Writes `text` to `path`; returns 0 on success. */
int fv_test_write_file(const char *path, const char *text);

/* Fails the current test unless `code` holds each of `lines` (NULL-
 * terminated) in this order, naming the first one missing or out of order. */
void fv_test_assert_lines_in_order(const char *code, const char *const *lines);

/* Occurrences of `needle` in `text` (overlapping ones too). */
int fv_test_count_occurrences(const char *text, const char *needle);

/* Runs a suite with CK_FORK and returns the process exit status (0 when all
 * tests pass).  Honours CK_RUN_CASE and friends. */
int fv_test_run_suite(Suite *suite);

/* Fails the current test with the last fv error message if `status` is not
 * FV_OK. */
#define FV_ASSERT_OK(expr)                                                          \
    do {                                                                            \
        fv_status assert_status_ = (expr);                                          \
        ck_assert_msg(assert_status_ == FV_OK, "%s failed: %s (%s)", #expr,          \
                      fv_error_message(), fv_status_name(assert_status_));          \
    } while (0)

#endif
