/* signals.c: the stop flag set by SIGINT and SIGTERM. */
#include "service/signals.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

static volatile sig_atomic_t pending_signal;

static void record_signal(int signal_number)
{
    if (pending_signal == 0)
        pending_signal = signal_number;
}

static fv_status set_action(int signal_number, void (*handler)(int))
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    /* Interrupted reads and writes restart; poll and nanosleep never do on
     * Linux (signal(7)), so the loops that wait in them wake up at once. */
    action.sa_flags = SA_RESTART;
    if (sigaction(signal_number, &action, NULL) != 0)
        FV_FAIL(FV_ERR_INTERNAL, "sigaction(%d) failed: %s", signal_number, strerror(errno));
    return FV_OK;
}

fv_status fv_signal_install(void)
{
    FV_TRY(set_action(SIGINT, record_signal));
    FV_TRY(set_action(SIGTERM, record_signal));
    FV_TRY(set_action(SIGPIPE, SIG_IGN));
    FV_TRY(set_action(SIGXFSZ, SIG_IGN));
    return FV_OK;
}

int fv_signal_pending(void) { return (int)pending_signal; }

int fv_signal_exit_code(int signal_number) { return 128 + signal_number; }

int fv_signal_stop_exit_code(void)
{
    int received = fv_signal_pending();
    return fv_signal_exit_code(received ? received : SIGTERM);
}
