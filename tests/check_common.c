/* check_common.c: SHA-256 against the FIPS 180-4 examples, the text buffer,
 * and error values with their file:line trails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "common/status.h"
#include "common/text.h"
#include "test_support.h"

START_TEST(sha256_known_answers)
{
    char hex[65];
    fv_sha256_hex_of("abc", 3, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    fv_sha256_hex_of("", 0, hex);
    ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    fv_sha256_hex_of(two_blocks, strlen(two_blocks), hex);
    ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* one million 'a', fed in uneven pieces */
    fv_sha256 hash;
    fv_sha256_init(&hash);
    char piece[997];
    memset(piece, 'a', sizeof piece);
    size_t left = 1000000;
    while (left > 0) {
        size_t take = left < sizeof piece ? left : sizeof piece;
        fv_sha256_update(&hash, piece, take);
        left -= take;
    }
    uint8_t digest[32];
    fv_sha256_final(&hash, digest);
    fv_sha256_hex(digest, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

START_TEST(text_buffer_grows_and_hands_over)
{
    fv_text text = {0};
    ck_assert_str_eq(fv_text_str(&text), "");
    for (int i = 0; i < 1000; i++)
        fv_text_printf(&text, "%d,", i);
    fv_text_append(&text, "end", 3);
    FV_ASSERT_OK(fv_text_status(&text));
    ck_assert(strncmp(fv_text_str(&text), "0,1,2,", 6) == 0);
    ck_assert_str_eq(fv_text_str(&text) + text.length - 7, "999,end");
    fv_text_reset(&text);
    ck_assert_str_eq(fv_text_str(&text), "");
    fv_text_printf(&text, "kept");
    char *taken = fv_text_take(&text);
    ck_assert_str_eq(taken, "kept");
    ck_assert_ptr_null(text.data);
    free(taken);
}
END_TEST

static fv_status innermost(void) { FV_FAIL(FV_ERR_IO, "cannot write %s", "out.h5"); }
static fv_status middle(void)
{
    FV_TRY(innermost());
    return FV_OK;
}
static fv_status outer(void)
{
    FV_TRY(middle());
    return FV_OK;
}

START_TEST(errors_keep_message_and_trail)
{
    ck_assert_int_eq(outer(), FV_ERR_IO);
    ck_assert_int_eq(fv_error_status(), FV_ERR_IO);
    ck_assert_str_eq(fv_error_message(), "cannot write out.h5");
    const char *trail = fv_error_trail();
    ck_assert_ptr_nonnull(strstr(trail, "raised at "));
    ck_assert_ptr_nonnull(strstr(trail, "check_common.c:"));
    ck_assert_ptr_nonnull(strstr(trail, ", via "));
    fv_error_prefix("case %s", "x/bf16/8x8/s0");
    ck_assert_str_eq(fv_error_message(), "case x/bf16/8x8/s0: cannot write out.h5");
    ck_assert_str_eq(fv_status_name(FV_ERR_HDF5), "hdf5");
    ck_assert_int_eq(fv_status_exit_code(FV_OK), 0);
    ck_assert_int_eq(fv_status_exit_code(FV_ERR_MPI), 2);
    fv_error_clear();
    ck_assert_int_eq(fv_error_status(), FV_OK);
    ck_assert_str_eq(fv_error_message(), "");
}
END_TEST

static Suite *common_suite(void)
{
    Suite *suite = suite_create("common");
    TCase *tcase = tcase_create("common");
    tcase_add_test(tcase, sha256_known_answers);
    tcase_add_test(tcase, text_buffer_grows_and_hands_over);
    tcase_add_test(tcase, errors_keep_message_and_trail);
    suite_add_tcase(suite, tcase);
    return suite;
}

int main(void) { return fv_test_run_suite(common_suite()); }
