/* run_command.c: `fuservalidate run PATH...`.  Collects the cases, records
 * files that cannot be read as errors, and runs each case through the stages
 * this build has. */
#include <stdio.h>
#include <stdlib.h>

#include "service/commands.h"
#include "validate/references.h"

int fv_command_run(const fv_options *options)
{
    fv_case_list list = {0};
    fv_case **cases = NULL;
    int32_t count = 0;
    int exit_code = 0;
    if (fv_options_select_cases(options, &list, &cases, &count) != FV_OK) {
        fprintf(stderr, "fuservalidate: %s\n", fv_error_message());
        exit_code = 2;
        goto done;
    }
    fv_command_print_case_errors(&list);
    int failed = 0;
    for (int32_t i = 0; i < count; i++) {
        char key[65];
        fv_status status = fv_ref_key(cases[i], key, NULL);
        if (status == FV_OK)
            status = fv_case_check_bound(cases[i]);
        printf("%-8s %s%s%s\n", status == FV_OK ? "parsed" : "error", cases[i]->id,
               status == FV_OK ? "" : ": ", status == FV_OK ? "" : fv_error_message());
        failed += status != FV_OK;
    }
    printf("%d cases read, %d failed, %d unreadable files\n", (int)count, failed,
           (int)list.error_count);
    exit_code = (failed > 0 || list.error_count > 0) ? 1 : 0;
done:
    free(cases);
    fv_case_list_free(&list);
    return exit_code;
}
