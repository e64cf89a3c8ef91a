/* main.c: the fuservalidate program.  Parses the sub-command and hands off to
 * the service module; the only place where a status becomes an exit code. */
#include <stdio.h>

#include "service/cli.h"

int main(int argc, char **argv)
{
    return fv_cli_main(argc, argv);
}
