#!/bin/sh
# Run one test script under a time limit: TEST_TIMEOUT seconds (default 600),
# then SIGTERM (the script's trap stops its processes), then SIGKILL 10 s later.
exec timeout -k 10 "${TEST_TIMEOUT:-600}" /bin/sh "$@"
